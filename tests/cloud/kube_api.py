"""A local Kubernetes API server of the endpoints the kubernetes launcher uses, strict on bodies.

No real API server can run here (no kube-apiserver, k3s or etcd package), so this one serves
Pods and Secrets of ``/api/v1/namespaces/{namespace}/…`` (create, read, list by label selector,
delete) and checks every request body against the Kubernetes schema of the installed
``kubernetes_asyncio`` (the client's generated models: each object's keys must be fields of
its model — ``attribute_map`` — with values of the field's type — ``openapi_types`` — and
each model is built with the client's own validation, which refuses missing required fields
and values outside an enum). A body that fails answers 422 with a ``Status`` as the real server
does. Deleting a Pod deletes the Secrets that name it as owner (the garbage collector's work).
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from kubernetes_asyncio.client import models

_LIST = re.compile(r"list\[(.+)\]")
_DICT = re.compile(r"dict\(([^,]+), (.+)\)")
_PRIMITIVES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "datetime": (str,),
    "date": (str,),
}


class SchemaError(ValueError):
    """A body does not fit the client's Kubernetes schema."""


def build(data: Any, kind: str, where: str = "$") -> Any:
    """``data`` (JSON) as the model ``kind`` of the client, or :class:`SchemaError`.

    Raises:
        SchemaError: An unknown field, a value of the wrong type, a missing required field
            or a value outside an enum, with the path of the offending value.
    """
    if match := _LIST.fullmatch(kind):
        if not isinstance(data, list):
            raise SchemaError(f"{where}: expected a list")
        return [build(item, match[1], f"{where}[{i}]") for i, item in enumerate(data)]
    if match := _DICT.fullmatch(kind):
        if not isinstance(data, dict):
            raise SchemaError(f"{where}: expected an object")
        return {key: build(value, match[2], f"{where}.{key}") for key, value in data.items()}
    if kind == "object":
        return data
    if kind in _PRIMITIVES:
        wanted = _PRIMITIVES[kind]
        if not isinstance(data, wanted) or (bool not in wanted and isinstance(data, bool)):
            raise SchemaError(f"{where}: expected {kind}, got {type(data).__name__}")
        return data
    cls = getattr(models, kind)
    if not isinstance(data, dict):
        raise SchemaError(f"{where}: expected a {kind} object")
    by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
    unknown = sorted(set(data) - set(by_json))
    if unknown:
        raise SchemaError(f"{where}: {kind} has no field {', '.join(unknown)}")
    kwargs = {
        by_json[key]: build(value, cls.openapi_types[by_json[key]], f"{where}.{key}")
        for key, value in data.items()
    }
    try:
        return cls(**kwargs)
    except ValueError as exc:
        raise SchemaError(f"{where}: {exc}") from exc


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.json_response(body, status=code)


def _selected(labels: dict[str, str], selector: str) -> bool:
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if labels.get(key) != value:
            return False
    return True


@dataclass
class KubeApi:
    """The served state: Pods and Secrets by namespace and name, and the requests seen."""

    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    secrets: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    _versions: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def app(self) -> web.Application:
        """The aiohttp application serving the endpoints."""
        app = web.Application()
        base = "/api/v1/namespaces/{namespace}"
        app.router.add_post(base + "/pods", self._create_pod)
        app.router.add_get(base + "/pods", self._list_pods)
        app.router.add_get(base + "/pods/{name}", self._read("pods"))
        app.router.add_delete(base + "/pods/{name}", self._delete_pod)
        app.router.add_post(base + "/secrets", self._create_secret)
        app.router.add_get(base + "/secrets/{name}", self._read("secrets"))
        app.router.add_delete(base + "/secrets/{name}", self._delete_secret)
        return app

    def _stamp(self, obj: dict[str, Any], namespace: str) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        meta.update(
            namespace=namespace,
            uid=str(uuid.uuid4()),
            resourceVersion=str(next(self._versions)),
            creationTimestamp=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        return obj

    async def _body(self, request: web.Request, kind: str) -> dict[str, Any]:
        self.requests.append((request.method, request.path))
        raw = await request.read()
        data = json.loads(raw) if raw else {}
        build(data, kind)  # raises SchemaError
        if not isinstance(data, dict):
            raise SchemaError("$: expected an object")
        return data

    async def _create(
        self, request: web.Request, kind: str, store: dict[tuple[str, str], dict[str, Any]]
    ) -> web.Response:
        namespace = request.match_info["namespace"]
        try:
            obj = await self._body(request, kind)
        except SchemaError as exc:
            return _status(422, "Invalid", str(exc))
        name = obj.get("metadata", {}).get("name")
        if not name:
            return _status(422, "Invalid", "metadata.name: Required value")
        if (namespace, name) in store:
            return _status(409, "AlreadyExists", f"{name} already exists")
        store[(namespace, name)] = self._stamp(obj, namespace)
        if kind == "V1Pod":
            obj["status"] = {"phase": "Pending"}
        return web.json_response(obj, status=201)

    async def _create_pod(self, request: web.Request) -> web.Response:
        return await self._create(request, "V1Pod", self.pods)

    async def _create_secret(self, request: web.Request) -> web.Response:
        return await self._create(request, "V1Secret", self.secrets)

    def _read(self, what: str) -> Any:
        async def read(request: web.Request) -> web.Response:
            self.requests.append((request.method, request.path))
            store = self.pods if what == "pods" else self.secrets
            key = (request.match_info["namespace"], request.match_info["name"])
            if key not in store:
                return _status(404, "NotFound", f"{what} {key[1]} not found")
            return web.json_response(store[key])

        return read

    async def _list_pods(self, request: web.Request) -> web.Response:
        self.requests.append((request.method, request.path_qs))
        namespace = request.match_info["namespace"]
        selector = request.query.get("labelSelector", "")
        items = [
            pod
            for (ns, _), pod in sorted(self.pods.items())
            if ns == namespace and _selected(pod["metadata"].get("labels", {}), selector)
        ]
        body = {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": items}
        return web.json_response(body)

    async def _delete(
        self, request: web.Request, store: dict[tuple[str, str], dict[str, Any]]
    ) -> tuple[web.Response, dict[str, Any] | None]:
        try:
            await self._body(request, "V1DeleteOptions")
        except SchemaError as exc:
            return _status(422, "Invalid", str(exc)), None
        key = (request.match_info["namespace"], request.match_info["name"])
        gone = store.pop(key, None)
        if gone is None:
            return _status(404, "NotFound", f"{key[1]} not found"), None
        return web.json_response(gone), gone

    async def _delete_pod(self, request: web.Request) -> web.Response:
        response, pod = await self._delete(request, self.pods)
        if pod is not None:
            self.collect(pod["metadata"]["uid"])
        return response

    async def _delete_secret(self, request: web.Request) -> web.Response:
        return (await self._delete(request, self.secrets))[0]

    def collect(self, owner_uid: str) -> None:
        """Delete the Secrets owned by the object ``owner_uid`` (garbage collection)."""
        for key, secret in list(self.secrets.items()):
            owners = secret["metadata"].get("ownerReferences", [])
            if any(owner["uid"] == owner_uid for owner in owners):
                del self.secrets[key]
