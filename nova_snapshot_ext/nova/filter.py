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

"""The paste filter an operator adds to nova-api's ``api-paste.ini``.

::

    [filter:snapshot_ext]
    paste.filter_factory = nova_snapshot_ext.nova.filter:filter_factory

    [composite:openstack_compute_api_v21]
    use = call:nova.api.auth:pipeline_factory_v21
    keystone = cors ... keystonecontext snapshot_ext osapi_compute_app_v21

The filter must come after ``keystonecontext`` (it reads
``environ['nova.context']``).  When nova-api loads the pipeline,
:func:`filter_factory`:

1. checks that this Nova is one the plugin knows
   (:func:`.hook.check_nova`); if not, logs one ERROR line and the filter
   passes every request through untouched;
2. registers the plugin's options on Nova's ``nova.conf.CONF``
   (``[snapshot_ext]``, ``[snapshot_ext_glance]``, ``[snapshot_ext_nova]``
   and the driver's group; Nova's own groups are never touched);
3. loads the driver (``[snapshot_ext] driver``, else inferred from Nova's
   ``[DEFAULT] compute_driver`` / ``[libvirt] virt_type``);
4. installs the activation hook (:mod:`.hook`) unless
   ``[snapshot_ext_nova] activation = false``.

Per request (``[snapshot_ext_nova] early_refusal``), a ``createImage``
action on a volume-backed server is preflighted before Nova snapshots any
volume; a refusal is answered with Nova's own fault body
(``{"badRequest": {"code": 400, "message": ...}}``, ``forbidden`` 403).
Everything else - other requests, image-backed servers, requests the
caller may not make (Nova answers those), and any unexpected error in the
check (logged) - goes on to Nova unchanged.
"""

from __future__ import annotations

import re
import threading
import typing as ty

from oslo_log import log as logging
from oslo_serialization import jsonutils
import webob
import webob.dec
import webob.exc

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.nova import adapter
from nova_snapshot_ext.nova import conf as conf_mod
from nova_snapshot_ext.nova import hook
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import service as service_mod

LOG = logging.getLogger(__name__)

#: ``PATH_INFO`` of a server action below ``/v2.1`` (optionally after the
#: legacy project-id segment).
ACTION_PATH = re.compile(
    r'^(?:/[^/]+)?/servers/(?P<server_id>[^/]+)/action/?$')

#: Nova's policies that must allow the caller before the plugin answers
#: for Nova (``nova/policies/servers.py``); if either denies, Nova answers.
CREATE_IMAGE_POLICIES = (
    'os_compute_api:servers:create_image',
    'os_compute_api:servers:create_image:allow_volume_backed',
)


class Plugin:
    """The loaded plugin, shared by every pipeline of one nova-api.

    :param conf: Nova's ``CONF`` (options registered).
    :param service: the :class:`SnapshotService`.
    :param activation: the hook is installed.
    """

    def __init__(self, conf: ty.Any, service: service_mod.SnapshotService,
                 activation: bool):
        self.conf = conf
        self.service = service
        self.activation = activation

    @property
    def early_refusal(self) -> bool:
        return bool(self.conf[conf_mod.GROUP].early_refusal)


_plugin_lock = threading.Lock()
_plugin: Plugin | None = None
_refused = False


def load_plugin(conf: ty.Any = None) -> Plugin | None:
    """Load the plugin into this nova-api process (once).

    :param conf: Nova's configuration; default ``nova.conf.CONF``.
    :returns: the :class:`Plugin`, or ``None`` when it refused to load
        (one ERROR line says why; the filter then passes through).
    """
    global _plugin, _refused
    with _plugin_lock:
        if _plugin is not None or _refused:
            return _plugin
        reason = hook.check_nova()
        if reason is None:
            try:
                if conf is None:
                    import nova.conf
                    conf = nova.conf.CONF
                opts.register_opts(conf)
                conf_mod.register_opts(conf)
                driver = driver_mod.load_driver(conf)
                service = service_mod.SnapshotService(conf, driver=driver)
            except Exception as err:
                reason = '%s: %s' % (type(err).__name__, err)
        if reason is not None:
            _refused = True
            LOG.error('nova-snapshot-ext is NOT active in this nova-api; '
                      'requests pass through to Nova unchanged: %s', reason)
            return None
        activation = bool(conf[conf_mod.GROUP].activation)
        if activation:
            activation = hook.install(conf, service)
        _plugin = Plugin(conf, service, activation)
        LOG.info('nova-snapshot-ext loaded: driver %(driver)s, activation '
                 '%(act)s, early refusal %(early)s',
                 {'driver': driver.name, 'act': activation,
                  'early': _plugin.early_refusal})
        return _plugin


def unload_plugin() -> None:
    """Forget the loaded plugin and give Nova its method back (tests)."""
    global _plugin, _refused
    with _plugin_lock:
        _plugin = None
        _refused = False
    hook.disable()


def filter_factory(global_conf: dict, **local_conf: str
                   ) -> ty.Callable[[ty.Any], ty.Any]:
    """Paste filter factory (``paste.filter_factory``).

    :param global_conf: paste's ``[DEFAULT]`` (unused).
    :param local_conf: the ``[filter:...]`` section's keys (unused; every
        setting lives in nova.conf).
    :returns: a function wrapping the next WSGI app in
        :class:`SnapshotExtMiddleware`, or returning it unchanged when the
        plugin refused to load.
    """
    plugin = load_plugin()

    def _filter(app: ty.Any) -> ty.Any:
        if plugin is None:
            return app
        return SnapshotExtMiddleware(app, plugin)

    return _filter


class SnapshotExtMiddleware:
    """Refuse a doomed ``createImage`` of a volume-backed server early.

    :param application: the next WSGI app of Nova's pipeline.
    :param plugin: the loaded :class:`Plugin`.
    """

    def __init__(self, application: ty.Any, plugin: Plugin):
        self.application = application
        self.plugin = plugin

    def _to_nova(self, req: webob.Request) -> ty.Any:
        """Nova's answer; a ``createImage`` runs with its request named.

        The activation hook builds the image record from the same request
        as the early check (one record): :func:`.hook.
        pending_create_image` tells it which request Nova is serving.
        """
        if req.method != 'POST' or not self.plugin.activation:
            return self.application
        match = ACTION_PATH.match(req.path_info)
        action = _create_image_body(req) if match else None
        context = req.environ.get('nova.context')
        if match is None or action is None or context is None:
            return self.application
        with hook.pending_create_image(context, match.group('server_id'),
                                       action['name'],
                                       action.get('metadata') or {}):
            return req.get_response(self.application)

    @webob.dec.wsgify
    def __call__(self, req: webob.Request) -> ty.Any:
        if req.method == 'POST' and self.plugin.early_refusal:
            match = ACTION_PATH.match(req.path_info)
            if match:
                try:
                    refusal = self._check(req, match.group('server_id'))
                except Exception:
                    LOG.exception('nova-snapshot-ext: early check of %s '
                                  'failed; passing the request to Nova',
                                  req.path_info)
                    refusal = None
                if refusal is not None:
                    return refusal
        return self._to_nova(req)

    def _check(self, req: webob.Request, server_id: str) -> ty.Any:
        """Preflight a ``createImage``; a Nova fault response or ``None``."""
        action = _create_image_body(req)
        if action is None:
            return None
        context = req.environ.get('nova.context')
        if context is None:
            LOG.warning('nova-snapshot-ext: no nova.context in the request; '
                        'place the snapshot_ext filter after '
                        'keystonecontext in api-paste.ini')
            return None
        loaded = _load_server(context, server_id)
        if loaded is None:
            return None
        instance, bdms = loaded
        from nova.compute import utils as compute_utils

        if not compute_utils.is_volume_backed_instance(context, instance,
                                                       bdms):
            return None
        snapshot = adapter.request_from_nova(
            context, instance, bdms, action['name'],
            action.get('metadata') or {})
        glance = hook.client_for_context(context, self.plugin.conf)
        try:
            self.plugin.service.preflight(snapshot, glance)
        except exception.PreflightError as err:
            LOG.info('nova-snapshot-ext: refused createImage of server '
                     '%(server)s before any volume snapshot: %(reason)s',
                     {'server': server_id, 'reason': err.format_message()})
            return _fault(err.code, err.format_message())
        return None


def _create_image_body(req: webob.Request) -> dict[str, ty.Any] | None:
    """The ``createImage`` object if well formed, else ``None``.

    A malformed body is Nova's to answer (its schema validation).
    """
    try:
        body = jsonutils.loads(req.body)
    except (ValueError, TypeError):
        return None
    if not isinstance(body, dict):
        return None
    action = body.get('createImage')
    if not isinstance(action, dict) or not isinstance(
            action.get('name'), str):
        return None
    metadata = action.get('metadata') or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str)
            for k, v in metadata.items()):
        return None
    return action


def _load_server(context: ty.Any, server_id: str
                 ) -> tuple[ty.Any, ty.Any] | None:
    """Instance and BDMs from the server's cell, if the caller may snapshot.

    :returns: ``(Instance, BlockDeviceMappingList)``, or ``None`` when the
        server does not exist for the caller or Nova's policy would refuse
        the snapshot (Nova then answers 404/403 itself).
    """
    from nova import context as nova_context
    from nova import exception as nova_exc
    from nova import objects

    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(context,
                                                               server_id)
    except nova_exc.InstanceMappingNotFound:
        return None
    with nova_context.target_cell(context, mapping.cell_mapping) as cctxt:
        try:
            # Both metadata columns, as compute.api.API.get loads them
            # (leaving one out makes Nova 34 use SQLAlchemy's deprecated
            # noload()).
            instance = objects.Instance.get_by_uuid(
                cctxt, server_id,
                expected_attrs=['metadata', 'system_metadata'])
        except nova_exc.InstanceNotFound:
            return None
        target = {'project_id': instance.project_id}
        for rule in CREATE_IMAGE_POLICIES:
            if not context.can(rule, target=target, fatal=False):
                return None
        bdms = objects.BlockDeviceMappingList.get_by_instance_uuid(
            cctxt, instance.uuid)
    return instance, bdms


def _fault(code: int, message: str) -> ty.Any:
    """Nova's own fault response (``nova.api.openstack.wsgi.Fault``)."""
    from nova.api.openstack import wsgi as nova_wsgi

    exc_class = webob.exc.status_map.get(code, webob.exc.HTTPBadRequest)
    return nova_wsgi.Fault(exc_class(explanation=message))
