"""Build and cache the bot machine's VM image (``meetbot image build``).

The image is made by the repository's ``images/`` scripts and ``packer/`` template: a base
qcow2 built natively with mmdebstrap (``images/build-base.sh``), then Packer's qemu builder
boots it, provisions it and runs the self-test. The result is cached outside the checkout
under a key that hashes every input (:mod:`meetbot.image.inputs`), so a second build of the
same sources reuses it (:mod:`meetbot.image.cache`).

Modules: ``inputs`` (the input hash and the wheel), ``cache`` (the cache's layout and
manifests), ``accel`` (KVM or TCG, probed by booting), ``seed`` (the build VM's NoCloud
seed), ``build`` (running build-base and packer with progress), ``cli`` (the command).
"""
