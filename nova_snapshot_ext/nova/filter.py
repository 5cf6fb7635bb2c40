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
2. reads every plugin option value from nova.conf's sources on a private
   configuration (:func:`.conf.invalid_values`); one bad value: one ERROR
   line naming it, nothing registered on Nova's ``CONF``, pass-through;
3. registers the plugin's options on Nova's ``nova.conf.CONF``
   (``[snapshot_ext]``, ``[snapshot_ext_glance]``, ``[snapshot_ext_nova]``
   and the driver's group; Nova's own groups are never touched);
4. loads the driver (``[snapshot_ext] driver``, else inferred from Nova's
   ``[DEFAULT] compute_driver`` / ``[libvirt] virt_type``, else libvirt)
   and logs which one and why (:func:`driver_choice`);
5. installs the activation hook (:mod:`.hook`) unless
   ``[snapshot_ext_nova] activation = false``.

Per request (``[snapshot_ext_nova] early_refusal``), a ``createImage``
action on a volume-backed server is preflighted before Nova snapshots any
volume; a refusal is answered with Nova's own fault body
(``{"badRequest": {"code": 400, "message": ...}}``, ``forbidden`` 403) and
Nova's microversion headers.  What Nova refuses on its own is left to Nova
(see :meth:`SnapshotExtMiddleware._check`).
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
from oslo_utils import uuidutils
import webob
import webob.dec
import webob.exc

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.nova import adapter
from nova_snapshot_ext.nova import conf as conf_mod
from nova_snapshot_ext.nova import hook
from nova_snapshot_ext.nova import volumes
from nova_snapshot_ext import opts
from nova_snapshot_ext.snapshot import service as service_mod

LOG = logging.getLogger(__name__)

#: ``PATH_INFO`` of a server action below ``/v2.1`` (optionally after the
#: legacy project-id segment).
ACTION_PATH = re.compile(
    r'^(?:/(?P<project_id>[^/]+))?/servers/(?P<server_id>[^/]+)/action/?$')

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

    Order: the Nova gate (:func:`.hook.check_nova`), then every plugin
    option value read from nova.conf's sources on a private configuration
    (:func:`.conf.invalid_values`), and only then the options registered
    on Nova's ``CONF``, the driver loaded and the hook installed.  A
    failure at any step logs one ERROR line (naming the option and its
    reason for a bad value) and leaves Nova as if the filter were absent;
    a bad value is never registered on Nova's ``CONF``, so Nova's own
    start-up option logging (``log_opt_values``) keeps working.

    :param conf: Nova's configuration; default ``nova.conf.CONF``.
    :returns: the :class:`Plugin`, or ``None`` when it refused to load
        (one ERROR line per nova-api process says why; the filter then
        passes through).
    """
    global _plugin, _refused
    with _plugin_lock:
        if _plugin is not None or _refused:
            return _plugin
        plugin = None
        try:
            reason = hook.check_nova()
            if reason is None:
                if conf is None:
                    import nova.conf
                    conf = nova.conf.CONF
                reason = _configuration_reason(conf)
            if reason is None:
                plugin, reason = _load(conf)
        except Exception as err:
            reason = 'unexpected %s: %s' % (type(err).__name__, err)
        if plugin is None:
            _refused = True
            LOG.error('nova-snapshot-ext is NOT active in this nova-api; '
                      'requests pass through to Nova unchanged: %s', reason)
            return None
        _plugin = plugin
        return _plugin


def _configuration_reason(conf: ty.Any) -> str | None:
    """The ERROR reason for bad plugin option values, else ``None``."""
    bad = conf_mod.invalid_values(conf)
    if not bad:
        return None
    return ('invalid value%s in nova.conf: %s; fix and restart nova-api' %
            ('s' if len(bad) > 1 else '', '; '.join(bad)))


def driver_choice(conf: ty.Any) -> driver_mod.DriverChoice:
    """Which snapshot driver the plugin uses inside nova-api, and why.

    :param conf: Nova's ``CONF`` with the plugin's options registered.
    :returns: :func:`~nova_snapshot_ext.driver.choose_driver`'s choice:
        its reason names the option it came from, or says that libvirt is
        assumed for its formats and nothing stamped because nova-api's
        nova.conf has no ``[DEFAULT] compute_driver`` (usual on API hosts:
        that option lives on the compute hosts) or one no driver claims.
    """
    return driver_mod.choose_driver(conf)


def _load(conf: ty.Any) -> tuple[Plugin | None, str | None]:
    """Register, load the driver, install the hook (lock held)."""
    opts.register_opts(conf)
    conf_mod.register_opts(conf)
    choice = driver_choice(conf)
    why = choice.reason
    try:
        driver = driver_mod.load_driver(conf, choice)
        service = service_mod.SnapshotService(conf, driver=driver)
        if (conf[conf_mod.GROUP].glance_connection ==
                conf_mod.CONNECTION_PLUGIN):
            # [snapshot_ext_glance] is read here, not at the first
            # snapshot: an unknown auth_type or a missing option is a bad
            # option, met at start-up (no request is sent).
            glance_mod.load_session(conf)
    except Exception as err:
        return None, '%s: %s' % (type(err).__name__, err)
    activation = bool(conf[conf_mod.GROUP].activation)
    if activation:
        activation = hook.install(conf, service)
    plugin = Plugin(conf, service, activation)
    details = ''
    virt_type = getattr(driver, 'virt_type', None)
    if virt_type:
        details = ' (virt_type %s)' % virt_type
    LOG.info('nova-snapshot-ext loaded: driver %(driver)s%(details)s, '
             'chosen by %(why)s; activation %(act)s, early refusal '
             '%(early)s',
             {'driver': driver.name, 'details': details, 'why': why,
              'act': activation, 'early': plugin.early_refusal})
    return plugin, None


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
        backup = self._backup(req)
        if backup is not None:
            return backup
        if req.method == 'POST' and self.plugin.early_refusal:
            match = ACTION_PATH.match(req.path_info)
            if match:
                try:
                    refusal = self._check(req, match.group('project_id'),
                                          match.group('server_id'))
                except (exception.InvalidRequest,
                        exception.InvalidServerState) as err:
                    # Input Nova answers itself (a server in a state Nova
                    # refuses, data Nova validates...): no error here.
                    LOG.debug('nova-snapshot-ext: early check of %s '
                              'left to Nova: %s', req.path_info,
                              err.format_message())
                    refusal = None
                except exception.SnapshotExtException as err:
                    # E.g. Glance unreachable for the check: one line.
                    LOG.warning('nova-snapshot-ext: early check of %s '
                                'not possible, passing the request to '
                                'Nova: %s', req.path_info,
                                err.format_message())
                    refusal = None
                except Exception:
                    LOG.exception('nova-snapshot-ext: early check of %s '
                                  'failed; passing the request to Nova',
                                  req.path_info)
                    refusal = None
                if refusal is not None:
                    return refusal
        return self._to_nova(req)

    def _backup(self, req: webob.Request) -> ty.Any:
        """A ``createBackup`` the plugin serves (:mod:`.backup`), or None.

        Only with ``[snapshot_ext] volume_backed_backups = true`` and the
        activation hook installed.  From its preflight on,
        :func:`.backup.serve` answers every failure itself (its cause, not
        Nova's "not supported"); an unexpected error before it (nothing
        done for the request yet) is logged and the request goes to Nova,
        as if the plugin were absent.
        """
        if (req.method != 'POST' or not self.plugin.activation or
                not self.plugin.conf.snapshot_ext.volume_backed_backups):
            return None
        match = ACTION_PATH.match(req.path_info)
        if match is None or b'createBackup' not in req.body:
            return None
        from nova_snapshot_ext.nova import backup as backup_route

        try:
            return backup_route.serve(
                req, match.group('project_id'), match.group('server_id'),
                self.plugin.service, self.plugin.conf, _fault)
        except exception.SnapshotExtException as err:
            LOG.warning('nova-snapshot-ext: createBackup of %s not served, '
                        'passing it to Nova: %s', req.path_info,
                        err.format_message())
        except Exception:
            LOG.exception('nova-snapshot-ext: createBackup of %s failed; '
                          'passing it to Nova', req.path_info)
        return None

    def _check(self, req: webob.Request, project_id: str | None,
               server_id: str) -> ty.Any:
        """Preflight a ``createImage``; a Nova fault response or ``None``.

        ``None`` (Nova answers) for everything Nova refuses on its own
        before it snapshots a volume: a project segment other than the
        caller's project, a server id that is not a UUID, a body Nova's
        ``createImage`` schema refuses, an API version Nova refuses, an
        unknown server, a policy denial.
        """
        action = _create_image_body(req)
        if action is None:
            return None
        context = req.environ.get('nova.context')
        if context is None:
            LOG.warning('nova-snapshot-ext: no nova.context in the request; '
                        'place the snapshot_ext filter after '
                        'keystonecontext in api-paste.ini')
            return None
        if project_id is not None and project_id != context.project_id:
            return None
        if not uuidutils.is_uuid_like(server_id):
            return None
        if not _nova_accepts(req):
            return None
        loaded = adapter.load_server(context, server_id,
                                     policies=CREATE_IMAGE_POLICIES)
        if loaded is None:
            return None
        instance, bdms = loaded
        from nova.compute import utils as compute_utils

        if not compute_utils.is_volume_backed_instance(context, instance,
                                                       bdms):
            return None
        try:
            volumes.check_snapshot_name(action['name'])
            snapshot = adapter.request_from_nova(
                context, instance, bdms, action['name'],
                action.get('metadata') or {})
        except exception.InvalidRequest as err:
            # Nova would fail on it after the quiesce (a name Cinder
            # refuses for the volume snapshots), or write this image
            # itself (a mapping that hands a new server this server's
            # in-use volume, a property that makes Glance destroy a
            # secret when the image is deleted): refused here, before
            # Nova snapshots a volume.
            LOG.info('nova-snapshot-ext: refused createImage of server '
                     '%(server)s before any volume snapshot: %(reason)s',
                     {'server': server_id, 'reason': err.format_message()})
            return _fault(err.code, err.format_message())
        glance = hook.client_for_context(context, self.plugin.conf)
        try:
            self.plugin.service.preflight(snapshot, glance)
        except exception.PreflightError as err:
            LOG.info('nova-snapshot-ext: refused createImage of server '
                     '%(server)s before any volume snapshot: %(reason)s',
                     {'server': server_id, 'reason': err.format_message()})
            return _fault(err.code, err.format_message())
        return None


def _nova_accepts(req: webob.Request) -> bool:
    """Nova's own microversion and ``createImage`` schema checks pass.

    Uses Nova's request class (``nova.api.openstack.wsgi.Request``: the
    ``OpenStack-API-Version`` / ``X-OpenStack-Nova-API-Version`` parsing
    and range check) and Nova's ``createImage`` body schema with Nova's
    validator.  The version set on the request stays in the WSGI environ,
    so a refusal made with :func:`_fault` carries Nova's version headers.

    :returns: False when Nova would refuse the request itself.
    """
    from nova.api.openstack.compute.schemas import servers as schemas
    from nova.api.openstack import wsgi as nova_wsgi
    from nova.api.validation import validators
    from nova import exception as nova_exc

    nova_req = nova_wsgi.Request(req.environ)
    try:
        nova_req.set_api_version_request()
    except (nova_exc.InvalidAPIVersionString,
            nova_exc.InvalidGlobalAPIVersion):
        return False
    try:
        validators._SchemaValidator(schemas.create_image).validate(
            jsonutils.loads(req.body))
    except nova_exc.ValidationError:
        return False
    return True


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


def _fault(code: int, message: str) -> ty.Any:
    """Nova's own fault response (``nova.api.openstack.wsgi.Fault``).

    Called as a WSGI app on the request's environ, it adds Nova's
    ``OpenStack-API-Version``, ``X-OpenStack-Nova-API-Version`` and
    ``Vary`` headers for the version :func:`_nova_accepts` set.
    """
    from nova.api.openstack import wsgi as nova_wsgi

    exc_class = webob.exc.status_map.get(code, webob.exc.HTTPBadRequest)
    return nova_wsgi.Fault(exc_class(explanation=message))
