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

"""The reversible patch of Nova's image-activation step.

Nova activates the image of a volume-backed snapshot in
``nova.image.glance.GlanceImageServiceV2.create`` when it is called with no
data and ``image_meta['size'] == 0`` (its "force activate" trigger): it
uploads zero bytes claiming ``disk_format=raw`` (Nova 31 and later), which
fails on a Glance that refuses ``raw``; Nova 29 and 30 claim the first of
``qcow2``, ``vhd``, ``vmdk``, ``raw`` that Glance's image schema lists,
which a Glance that inspects uploads refuses (zero bytes are not a qcow2
image).  The trigger and the method's signature are the same in Nova 29
to 34, so one wrapper serves them all.

:func:`install` replaces that method on the class with a wrapper that, for
exactly that trigger, lets the plugin create and activate the image
(checked first, honest payload, nothing left behind) and otherwise calls
Nova's method unchanged.

The wrapper:

1. builds the image record with the plugin's one builder
   (:func:`~nova_snapshot_ext.snapshot.metadata.build_image_record`, the
   one the early refusal judged): the paste filter names the
   ``createImage`` request being served (:func:`pending_create_image`),
   the hook loads that server and its mappings, and takes from Nova's
   metadata only the ids of the volume snapshots Nova just took.  So no
   system metadata that did not come from the server's image reaches the
   image (Nova copies ``vtpm_secret_uuid``, ``owner_user_name``...), and
   whatever the hook would refuse, the early check refused first.
   Without a named request (a create the filter did not see), the record
   is made from Nova's translated metadata with the same inheritance
   rules (:meth:`.adapter.NovaImageMeta.record`);
2. runs ``SnapshotService.check_record`` then ``register`` with a Glance
   client acting for the request context (:func:`client_for_context`,
   :func:`register_prepared`: the step the plugin's own ``createBackup``
   route, :mod:`.backup`, shares);
3. records, in Cinder snapshot metadata, the volume snapshots the active
   image names (:func:`.volumes.record_image_snapshots`, the proof
   ``audit --fix`` needs to delete them once the image is gone; never
   fails the snapshot);
4. returns ``self.show(context, image_id)``: the active image translated by
   Nova (``_translate_from_glance``), what Nova's ``create`` returns;
5. on a failure, deletes the volume snapshots Nova just took when no
   image may name them, names each one left with why
   (:func:`.volumes.settle`; Nova's own path leaks them all), and raises
   the Nova exception matching the failure, its message ending with
   those notes (:func:`.adapter.to_nova_exception`).

A create that names a ``disk_format``, ``container_format`` or
``location``, or that carries data, stays Nova's.

:func:`check_nova` refuses a Nova whose internals are not the ones this
module was written against (:data:`SUPPORTED_NOVA_MAJORS`, signatures).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.metadata
import inspect
import threading
import typing as ty

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext.cinder import nova_api
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import glance as glance_mod
from nova_snapshot_ext.nova import adapter
from nova_snapshot_ext.nova import conf as conf_mod
from nova_snapshot_ext.nova import volumes as volumes_mod
from nova_snapshot_ext import opts

if ty.TYPE_CHECKING:
    from nova_snapshot_ext.snapshot import service as service_mod

LOG = logging.getLogger(__name__)

#: Nova major versions whose image service this hook was written against
#: and tested with (``tox -e nova29`` ... ``nova34``: 29 = 2024.1 ...
#: 34 = 2026.2).  A later major the hook has not seen is refused.
SUPPORTED_NOVA_MAJORS = (29, 30, 31, 32, 33, 34)

#: Nova's volume-backed force-activation, by major: what Nova alone
#: uploads (``raw`` since e28f90866b in Nova 31; before it the first of
#: qcow2, vhd, vmdk, raw in Glance's image schema).
RAW_FORCE_ACTIVATE_SINCE = 31

#: The parameters of the wrapped method, in order.
CREATE_PARAMETERS = ('self', 'context', 'image_meta', 'data')

#: Attribute marking the wrapper; holds Nova's original function.
_ORIGINAL_ATTR = '_snapshot_ext_original'

_lock = threading.Lock()

#: The ``createImage`` request this thread is serving (set by the paste
#: filter around Nova's handling of it; a thread-local is per greenthread
#: under eventlet).
_pending = threading.local()


@contextlib.contextmanager
def pending_create_image(context: ty.Any, server_id: str, name: str,
                         metadata: ty.Mapping[str, str]
                         ) -> ty.Iterator[None]:
    """Name the ``createImage`` request Nova is about to serve.

    :param context: the request's ``nova.context.RequestContext`` (the
        object Nova passes down to the image service).
    :param server_id: the server's uuid from the URL.
    :param name: ``createImage`` ``name``.
    :param metadata: ``createImage`` ``metadata``.
    """
    previous = getattr(_pending, 'request', None)
    _pending.request = (context, server_id, name, dict(metadata))
    try:
        yield
    finally:
        _pending.request = previous


def _pending_for(context: ty.Any, name: ty.Any
                 ) -> tuple[str, dict[str, str]] | None:
    pending = getattr(_pending, 'request', None)
    if pending is None or pending[0] is not context or pending[2] != name:
        return None
    return pending[1], pending[3]


class _State:
    """What is installed (module-level, one per nova-api process)."""

    conf: cfg.ConfigOpts | None = None
    service: service_mod.SnapshotService | None = None
    plugin_session: ty.Any = None


_state = _State()


def nova_version() -> str | None:
    """The installed Nova's version string, or ``None`` if unknown."""
    try:
        return importlib.metadata.version('nova')
    except importlib.metadata.PackageNotFoundError:
        return None


def nova_major() -> int | None:
    """The installed Nova's major version, or ``None`` if unknown."""
    try:
        return int((nova_version() or '').split('.')[0])
    except ValueError:
        return None


def check_nova() -> str | None:
    """Check that Nova's internals are the ones the hook knows.

    :returns: ``None`` when the hook can be installed, else the reason it
        cannot (one sentence, for the ERROR log line).
    """
    version = nova_version()
    major = nova_major()
    if major not in SUPPORTED_NOVA_MAJORS:
        return ('Nova %s is not a supported version (supported major '
                'versions: %s)' % (version, ', '.join(
                    map(str, SUPPORTED_NOVA_MAJORS))))
    try:
        from nova.image import glance as nova_glance
        from nova import service_auth
    except ImportError as err:
        return 'Nova modules cannot be imported: %s' % err
    service_cls = getattr(nova_glance, 'GlanceImageServiceV2', None)
    create = getattr(service_cls, 'create', None)
    if create is None:
        return 'nova.image.glance.GlanceImageServiceV2.create is missing'
    create = getattr(create, _ORIGINAL_ATTR, create)
    params = tuple(inspect.signature(create).parameters)
    if params != CREATE_PARAMETERS:
        return ('nova.image.glance.GlanceImageServiceV2.create has '
                'parameters %s, expected %s' % (params, CREATE_PARAMETERS))
    auth_parts: tuple[tuple[ty.Any, str], ...]
    if hasattr(service_auth, 'get_service_auth_session'):
        # Nova 33 and later.
        auth_parts = ((service_auth, 'get_service_auth_session'),
                      (service_auth, 'get_service_user_token_auth_plugin'))
    else:
        # Nova 29 to 32: the session and auth of Nova's image calls.
        auth_parts = ((nova_glance, '_session_and_auth'),)
    for owner, name in ((nova_glance, '_translate_to_glance'),
                        (nova_glance, 'get_api_servers'),
                        (service_cls, 'show')) + auth_parts:
        if not callable(getattr(owner, name, None)):
            return '%s.%s is missing' % (
                getattr(owner, '__name__', owner), name)
    return None


def installed() -> bool:
    """True while the wrapper replaces Nova's ``create``."""
    from nova.image import glance as nova_glance

    return hasattr(nova_glance.GlanceImageServiceV2.create, _ORIGINAL_ATTR)


def install(conf: cfg.ConfigOpts,
            service: service_mod.SnapshotService) -> bool:
    """Put the plugin in charge of Nova's force-activate step.

    Idempotent: a second call only replaces the configuration and service
    the installed wrapper uses.

    :param conf: Nova's ``CONF`` with the plugin's options registered.
    :param service: the :class:`SnapshotService` to run.
    :returns: True when installed, False when :func:`check_nova` refused
        (logged once at ERROR).
    """
    reason = check_nova()
    if reason:
        LOG.error('nova-snapshot-ext: not taking over volume-backed '
                  'snapshot activation: %s', reason)
        return False
    from nova.image import glance as nova_glance

    with _lock:
        _state.conf = conf
        _state.service = service
        _state.plugin_session = None
        cls = nova_glance.GlanceImageServiceV2
        if not hasattr(cls.create, _ORIGINAL_ATTR):
            cls.create = _make_wrapper(cls.create)
    LOG.info('nova-snapshot-ext: volume-backed snapshot images are '
             'activated by the plugin (driver %s, Nova %s)',
             service.driver.name, nova_version())
    return True


def disable() -> None:
    """Give Nova's ``create`` back (idempotent)."""
    from nova.image import glance as nova_glance

    with _lock:
        cls = nova_glance.GlanceImageServiceV2
        original = getattr(cls.create, _ORIGINAL_ATTR, None)
        if original is not None:
            cls.create = original
        _state.conf = None
        _state.service = None
        _state.plugin_session = None


def _make_wrapper(original: ty.Callable[..., ty.Any]
                  ) -> ty.Callable[..., ty.Any]:
    @functools.wraps(original)
    def create(self: ty.Any, context: ty.Any, image_meta: dict,
               data: ty.Any = None) -> dict[str, ty.Any]:
        service, conf = _state.service, _state.conf
        if (service is None or conf is None or data is not None or
                image_meta.get('size') != 0):
            return original(self, context, image_meta, data)
        from nova.image import glance as nova_glance

        sent = nova_glance._translate_to_glance(image_meta)
        member = sent.pop('instance_owner', None)
        meta = adapter.NovaImageMeta.read(sent, member)
        if not meta.plain:
            return original(self, context, image_meta, data)
        # Nova pops instance_owner from the caller's metadata too.
        image_meta.get('properties', {}).pop('instance_owner', None)
        if member == getattr(context, 'project_id', None):
            # The image's owner already; nothing to share.
            meta = dataclasses.replace(meta, member=None)
        return _activate(self, context, meta, service, conf)

    setattr(create, _ORIGINAL_ATTR, original)
    return create


def _activate(image_service: ty.Any, context: ty.Any,
              meta: adapter.NovaImageMeta,
              service: service_mod.SnapshotService,
              conf: cfg.ConfigOpts) -> dict[str, ty.Any]:
    """Check, create and activate; settle Nova's volume snapshots on failure.

    Nova took the volume snapshots named in ``meta`` just before calling
    the image service, and leaves them whatever fails after.  Here a
    failure before the image's create deletes them; one after deletes
    them unless an image may still name them (:func:`.volumes.why_kept`);
    every one not deleted is named with why (:func:`.volumes.settle`), in
    the log and in the message Nova answers with.
    """
    pending = _pending_for(context, meta.sent.get('name'))
    taken = meta.snapshot_ids or []
    volume_ids = None
    try:
        loaded = None
        if pending is not None:
            loaded = adapter.load_server(context, pending[0])
        volume_ids = _volume_ids(loaded)
        record = _record(context, meta, service, conf, pending, loaded)
        glance = client_for_context(context, conf)
        prepared = service.check_record(record, glance)
    except Exception as err:
        # Before any image was created: no image can name them.
        raise _failed(context, meta.name, err, taken, None, volume_ids)
    try:
        result = register_prepared(prepared, glance, service)
    except Exception as err:
        raise _failed(context, meta.name, err, taken,
                      volumes_mod.why_kept(err),
                      volume_ids)
    volumes_mod.record_image_snapshots(
        context, str(result.image_id),
        [str(m['snapshot_id']) for m in getattr(record, 'mappings', ())
         if m.get('snapshot_id')])
    return image_service.show(context, result.image_id)


def _volume_ids(loaded: tuple[ty.Any, ty.Any] | None) -> set[str] | None:
    """The volume ids of a loaded server's mappings, or None."""
    if loaded is None:
        return None
    return {bdm.volume_id for bdm in volumes_mod.volume_mappings(loaded[1])}


def _failed(context: ty.Any, name: str, err: Exception,
            taken: list[str | None],
            why_left: str | None, volume_ids: set[str] | None
            ) -> Exception:
    """Settle the volume snapshots, log it; the exception to raise.

    :returns: the Nova exception matching a plugin error (its message
        ending with what became of the snapshots, its cause ``err``), or
        ``err`` itself for any other failure (Nova answers it as its own).
    """
    settled = volumes_mod.settle(context, taken, why_left, volume_ids)
    if not isinstance(err, exception.SnapshotExtException):
        LOG.warning('nova-snapshot-ext: snapshot image %(name)s failed '
                    'unexpectedly: %(type)s: %(err)s%(notes)s',
                    {'name': name, 'type': type(err).__name__,
                     'err': err, 'notes': settled.suffix()})
        return err
    LOG.warning('nova-snapshot-ext: snapshot image %(name)s refused or '
                'failed: %(reason)s%(notes)s',
                {'name': name, 'reason': err.format_message(),
                 'notes': settled.suffix()})
    nova_err = adapter.to_nova_exception(err, settled.suffix())
    nova_err.__cause__ = err
    return nova_err


def register_prepared(prepared: ty.Any, glance: glance_mod.GlanceClient,
                      service: service_mod.SnapshotService) -> ty.Any:
    """Create and activate a checked image record; log the active image.

    Nova's ``createImage`` through the wrapper, and the plugin's
    ``createBackup`` route (:mod:`.backup`) after its own preflight.

    :param prepared: a ``PreparedSnapshot`` (``check_record`` or a
        backup's preflight).
    :returns: the active :class:`~..snapshot.result.SnapshotResult`.
    :raises ActivationFailed: no attempt activated an image.
    """
    result = service.register(prepared, glance)
    LOG.info('nova-snapshot-ext: snapshot image %(id)s (%(name)s) is '
             'active as %(fmt)s/%(cfmt)s, %(size)s B',
             {'id': result.image_id, 'name': result.name,
              'fmt': result.disk_format, 'cfmt': result.container_format,
              'size': result.size})
    return result


def _record(context: ty.Any, meta: adapter.NovaImageMeta,
            service: service_mod.SnapshotService, conf: cfg.ConfigOpts,
            pending: tuple[str, dict[str, str]] | None,
            loaded: tuple[ty.Any, ty.Any] | None) -> ty.Any:
    """The image record: the one builder's, else from Nova's metadata.

    :param pending: the ``createImage`` the filter named (server id,
        metadata), or None.
    :param loaded: that server and its mappings, when it could be loaded.
    """
    if pending is not None:
        server_id, metadata = pending
        snapshot_ids = meta.snapshot_ids
        if loaded is not None and snapshot_ids is not None:
            instance, bdms = loaded
            sizes = nova_api.NovaCinder(context).snapshot_sizes(
                [s for s in snapshot_ids if s])
            try:
                snapshot = adapter.request_from_nova(
                    context, instance, bdms, meta.name,
                    metadata, snapshot_ids=snapshot_ids,
                    snapshot_sizes=sizes)
            except exception.UnsafeRecord:
                # Not rebuilt from Nova's metadata: that is the same
                # unsafe record.
                raise
            except exception.InvalidRequest as err:
                LOG.warning('nova-snapshot-ext: %s', err.format_message())
            else:
                return service.build_record(snapshot)
        LOG.warning('nova-snapshot-ext: server %s or its volume snapshots '
                    "could not be matched; building the image record from "
                    "Nova's metadata", server_id)
    return meta.record(conf.snapshot_ext.non_inheritable_image_properties)


#: Nova ``[glance]`` keystoneauth adapter options passed on to the client
#: in ``glance_connection = nova`` mode (Nova's own calls do not use them;
#: they are honoured here when an operator set them).
_NOVA_ADAPTER_RETRY_OPTS = ('connect_retries', 'connect_retry_delay',
                            'status_code_retries', 'status_code_retry_delay')


def client_for_context(context: ty.Any,
                       conf: cfg.ConfigOpts | None = None
                       ) -> glance_mod.GlanceClient:
    """A Glance client acting for Nova's request context.

    Identity: Nova's auth plugin for the context (Nova 33+:
    ``service_auth.get_service_user_token_auth_plugin``; Nova 29-32:
    ``service_auth.get_auth_plugin``; either way the user's token, wrapped
    with a service token when ``[service_user] send_service_user_token``
    is true) and ``context.global_id`` as the global request id.

    Connection, by ``[snapshot_ext_nova] glance_connection``:

    ``nova`` (default)
        Nova's cached ``[glance]`` keystoneauth session and the endpoint
        Nova's own ``get_api_servers`` picks (``[glance] api_servers``,
        else the ``[glance]`` adapter: ``endpoint_override`` or the
        catalog).
    ``snapshot_ext_glance``
        a session and adapter options from ``[snapshot_ext_glance]``.

    :param context: a ``nova.context.RequestContext`` with a token.
    :param conf: Nova's ``CONF`` with the plugin's options; default the
        one the hook was installed with, else ``nova.conf.CONF``.
    :returns: :class:`~nova_snapshot_ext.image.glance.GlanceClient`.
    :raises GlanceUnavailable: no Glance endpoint could be found.
    """
    from nova.image import glance as nova_glance

    if conf is None:
        conf = _state.conf
    if conf is None:
        import nova.conf
        conf = nova.conf.CONF
    nova_session, auth = _nova_session_and_auth(context)
    if conf[conf_mod.GROUP].glance_connection == conf_mod.CONNECTION_PLUGIN:
        with _lock:
            if _state.plugin_session is None:
                _state.plugin_session = glance_mod.load_session(conf)
            session = _state.plugin_session
        options = glance_mod.adapter_kwargs(conf)
    else:
        session = nova_session
        try:
            endpoint = next(nova_glance.get_api_servers(context))
        except Exception as err:
            raise exception.GlanceUnavailable(
                operation='endpoint discovery',
                reason='%s: %s' % (type(err).__name__, err)) from err
        if not endpoint:
            raise exception.GlanceUnavailable(
                operation='endpoint discovery',
                reason='no image endpoint in [glance] or the catalog')
        options = {'endpoint_override': endpoint}
        for name in _NOVA_ADAPTER_RETRY_OPTS:
            value = getattr(conf.glance, name, None)
            if value is not None:
                options[name] = value
    # A total deadline per request ([snapshot_ext] request_timeout).
    options['request_timeout'] = conf[opts.CORE_GROUP].request_timeout
    return glance_mod.GlanceClient(session, auth=auth,
                                   global_request_id=context.global_id,
                                   **options)


def _nova_session_and_auth(context: ty.Any) -> tuple[ty.Any, ty.Any]:
    """Nova's ``[glance]`` session and the auth of its image calls.

    Nova 33 and later: ``service_auth.get_service_auth_session('glance')``
    and ``get_service_user_token_auth_plugin(context)``; Nova 29 to 32:
    ``nova.image.glance._session_and_auth(context)`` (the same cached
    session, and ``service_auth.get_auth_plugin``).  Either way the user's
    token, wrapped with a service token when ``[service_user]
    send_service_user_token`` is true.

    :returns: ``(keystoneauth1 Session, auth plugin)``.
    """
    from nova.image import glance as nova_glance
    from nova import service_auth

    if hasattr(service_auth, 'get_service_auth_session'):
        return (service_auth.get_service_auth_session('glance'),
                service_auth.get_service_user_token_auth_plugin(context))
    return nova_glance._session_and_auth(context)
