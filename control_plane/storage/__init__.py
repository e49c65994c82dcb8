"""Artifact storage (docs/architecture.md §4): recordings and screenshots behind presigned URLs.

``base`` defines the :class:`~control_plane.storage.base.ArtifactStorage` protocol; ``local``
keeps files under the data directory and signs URLs the control plane serves (``routes``);
``s3`` uses an S3-compatible bucket. :func:`~control_plane.storage.factory.open_storage` opens
the one the settings name.
"""
