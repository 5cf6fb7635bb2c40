# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""nova-snapshot-ext: honest activation of volume-backed snapshot images.

For library callers, a small facade (as os-vif's ``initialize``/``plug``):
:func:`initialize` once with the caller's ``ConfigOpts``, then
:func:`preflight` before anything is created (before the volume snapshots)
and :func:`snapshot_image` (not ``snapshot``: that name is the
:mod:`nova_snapshot_ext.snapshot` package)::

    import nova_snapshot_ext

    nova_snapshot_ext.initialize(conf)
    result = nova_snapshot_ext.snapshot_image(request)  # dict or request
    print(result.image_id, result.status, result.disk_format)

The modules behind it: :mod:`nova_snapshot_ext.snapshot.service` (the
service), :mod:`nova_snapshot_ext.snapshot.request` (the request format),
:mod:`nova_snapshot_ext.exception` (what can go wrong).
"""

from __future__ import annotations

import threading
import typing as ty

if ty.TYPE_CHECKING:
    from oslo_config import cfg

    from nova_snapshot_ext import driver as driver_mod
    from nova_snapshot_ext.image import glance as glance_mod
    from nova_snapshot_ext.snapshot import request as request_mod
    from nova_snapshot_ext.snapshot import result as result_mod
    from nova_snapshot_ext.snapshot import service as service_mod

_SERVICE: service_mod.SnapshotService | None = None
_LOCK = threading.Lock()


def initialize(conf: cfg.ConfigOpts,
               driver: driver_mod.SnapshotDriver | None = None,
               glance: glance_mod.GlanceClient | None = None
               ) -> service_mod.SnapshotService:
    """Register the options on ``conf`` and build the snapshot service.

    Called once per process (again to reconfigure); the modules are
    imported here, so importing the package stays cheap.

    :param conf: the caller's ``oslo_config.cfg.ConfigOpts``, already
        parsed (``[snapshot_ext]``, ``[snapshot_ext_glance]``,
        ``[snapshot_ext_<driver>]``).
    :param driver: a loaded driver; default: ``[snapshot_ext] driver``,
        else inferred from Nova's ``compute_driver``, else guessed (a
        guessed driver stamps no image property).
    :param glance: the Glance client; default: one built from
        ``[snapshot_ext_glance]`` on first use.
    :returns: the :class:`~nova_snapshot_ext.snapshot.service.
        SnapshotService` the other calls use.
    :raises ConfigurationError: an option is invalid (named).
    :raises DriverNotFound: the configured driver is not installed.
    :raises DriverLoadError: the driver failed to load.
    """
    global _SERVICE
    from nova_snapshot_ext.snapshot import service as service_mod

    svc = service_mod.SnapshotService(conf, driver=driver, glance=glance)
    with _LOCK:
        _SERVICE = svc
    return svc


def _service() -> service_mod.SnapshotService:
    from nova_snapshot_ext import exception

    with _LOCK:
        svc = _SERVICE
    if svc is None:
        raise exception.NotInitialized()
    return svc


def _request(request: request_mod.SnapshotRequest | ty.Mapping[str, ty.Any]
             ) -> request_mod.SnapshotRequest:
    from nova_snapshot_ext.snapshot import request as request_mod

    if isinstance(request, request_mod.SnapshotRequest):
        return request
    return request_mod.SnapshotRequest.from_dict(request)


def preflight(request: request_mod.SnapshotRequest | ty.Mapping[str, ty.Any]
              ) -> service_mod.PreparedSnapshot:
    """Every check that can fail without side effects; nothing is created.

    :param request: a :class:`~nova_snapshot_ext.snapshot.request.
        SnapshotRequest`, or its JSON-shaped dict (doc: the request
        format); the mappings may still carry placeholder snapshot ids.
    :returns: the checked record and its activation plan.
    :raises NotInitialized: :func:`initialize` was not called.
    :raises InvalidRequest: the request is malformed (field named).
    :raises PreflightError: a subclass naming the property or option at
        fault (``FormatNotAllowed``: no honest activation on this Glance).
    :raises GlanceError: Glance's capabilities could not be read.
    """
    return _service().preflight(_request(request))


def snapshot_image(request: request_mod.SnapshotRequest |
                   ty.Mapping[str, ty.Any]) -> result_mod.SnapshotResult:
    """Create and activate the snapshot image, exactly once.

    :param request: as :func:`preflight`, with the real volume snapshot
        ids.
    :returns: the :class:`~nova_snapshot_ext.snapshot.result.
        SnapshotResult` (``status == 'active'``, ``image_id``,
        ``disk_format``, the attempts).
    :raises NotInitialized: :func:`initialize` was not called.
    :raises InvalidRequest: as :func:`preflight`.
    :raises PreflightError: as :func:`preflight`; nothing was created.
    :raises ActivationFailed: no attempt activated an image; ``result``
        names the attempts and the images deleted or left, ``code`` the
        HTTP status of the last failure.
    :raises SnapshotInterrupted: Ctrl-C (``snapshot_result`` says what
        the snapshot left).
    """
    return _service().snapshot(_request(request))
