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

"""The snapshot driver interface and its stevedore loader.

A *driver* is the hypervisor-specific, purely declarative part of
nova-snapshot-ext.  It makes no hypervisor call.  It answers three
questions for the activation planner and the metadata builder:

* which Glance ``disk_format`` values its hypervisor can read, in
  preference order (:attr:`SnapshotDriver.disk_formats`);
* which image properties it stamps on the snapshot image
  (``hypervisor_type`` and ``vm_mode``, see
  :meth:`SnapshotDriver.image_properties`);
* whether the hypervisor can quiesce a guest
  (:attr:`SnapshotDriver.supports_quiesce`).

Drivers are found in the ``nova_snapshot_ext.drivers`` stevedore namespace
under short names (``libvirt``, ``vmwareapi``, ...).  A driver describes
itself: the Nova ``compute_driver`` families it serves
(:attr:`SnapshotDriver.compute_drivers`), its variants in the
compatibility matrix (:attr:`SnapshotDriver.matrix_variants`), its
options.  Adding a hypervisor is one module and one entry point: the
inference from ``compute_driver`` (:func:`choose_driver`), the lists, the
matrix and the help texts are derived from the entry points.  Each
driver's options live in the group ``[snapshot_ext_<name>]`` of the
consumer's ``ConfigOpts``; the global ``cfg.CONF`` is never touched.

A driver only *guessed* (neither ``[snapshot_ext] driver`` nor a
``compute_driver`` a driver claims) still gives the activation plan its
formats, but stamps no ``hypervisor_type``/``vm_mode``: a wrong stamp makes
Nova's ``ImagePropertiesFilter`` refuse every host of the cloud.

Nothing is loaded or registered at import time.
"""

from __future__ import annotations

import abc
import dataclasses
import threading
import typing as ty

from oslo_config import cfg
from oslo_log import log as logging
from stevedore import driver as sd_driver
from stevedore import exception as sd_exception
from stevedore import extension as sd_extension

from nova_snapshot_ext import exception
from nova_snapshot_ext.i18n import _

LOG = logging.getLogger(__name__)

#: stevedore namespace that holds the drivers (``setup.cfg``).
NAMESPACE = 'nova_snapshot_ext.drivers'

#: Prefix of each driver's option group: ``[snapshot_ext_<name>]``.
GROUP_PREFIX = 'snapshot_ext_'

#: Driver used when neither ``[snapshot_ext] driver`` nor Nova's
#: ``[DEFAULT] compute_driver`` names one.  libvirt (KVM/QEMU) is by far the
#: most deployed Nova hypervisor (the Nova admin guide calls KVM "the
#: default hypervisor for Compute"), so it is the least surprising guess.
DEFAULT_DRIVER = 'libvirt'

#: Glance ``disk_format`` names: the default of glance-api's
#: ``[image_format] disk_formats`` (glance/common/config.py).
GLANCE_DISK_FORMATS = frozenset((
    'raw', 'qcow2', 'vhd', 'vhdx', 'vmdk', 'vdi', 'iso', 'ploop',
    'aki', 'ari', 'ami',
))

#: ``hypervisor_type`` enum of Glance's ``OS::Compute::Hypervisor`` metadef
#: (glance ``etc/metadefs/compute-hypervisor.json``).
METADEF_HYPERVISOR_TYPES = frozenset((
    'baremetal', 'hyperv', 'kvm', 'lxc', 'powervm', 'qemu', 'uml',
    'vmware', 'vz', 'xen',
))

#: Values Nova's ``HVType`` field accepts that the metadef does not list.
#: The z/VM driver reports ``zvm`` in its ``supported_instances``, so an
#: image must carry ``hypervisor_type=zvm`` to pass the
#: ``ImagePropertiesFilter`` there.
NOVA_ONLY_HYPERVISOR_TYPES = frozenset(('zvm',))

#: Every ``hypervisor_type`` a driver may stamp.
HYPERVISOR_TYPES = METADEF_HYPERVISOR_TYPES | NOVA_ONLY_HYPERVISOR_TYPES

#: ``vm_mode`` enum of the ``OS::Compute::Hypervisor`` metadef (Nova
#: ``VMMode``).
VM_MODES = frozenset(('hvm', 'xen', 'uml', 'exe'))

#: The only image properties a driver may stamp.
IMAGE_PROPERTY_KEYS = ('hypervisor_type', 'vm_mode')


class SnapshotDriver(abc.ABC):
    """Declarative description of one hypervisor family.

    Subclasses set the class attributes and implement the abstract
    properties; they make no hypervisor call and need no instance to
    publish their options.

    Construction registers :attr:`CONFIG_OPTS` in ``[snapshot_ext_<name>]``
    of the given ``ConfigOpts`` (idempotent) and checks the invariants:
    at least one disk format, only Glance disk format names, no
    duplicates, a known ``hypervisor_type`` and ``vm_mode``, string
    property values.  Any violation raises
    :class:`~nova_snapshot_ext.exception.ConfigurationError` naming the
    option at fault.

    Example of the declared view (``capabilities()`` of the libvirt driver
    with ``virt_type = kvm``)::

        {"name": "libvirt",
         "hypervisor_types": ["kvm", "qemu", "lxc", "vz"],
         "hypervisor_type": "qemu",
         "disk_formats": ["qcow2", "raw", "vmdk", "vdi", "vhdx", "vhd",
                          "iso"],
         "supports_quiesce": true,
         "image_properties": {"hypervisor_type": "qemu", "vm_mode": "hvm"}}
    """

    #: Short name; equals the stevedore entry point name.
    name: ty.ClassVar[str] = ''

    #: ``OS::Compute::Hypervisor`` ``hypervisor_type`` values this family
    #: can serve (see :data:`HYPERVISOR_TYPES`).
    hypervisor_types: ty.ClassVar[tuple[str, ...]] = ()

    #: First dotted components of Nova's ``[DEFAULT] compute_driver`` this
    #: driver serves (Nova imports ``nova.virt.<compute_driver>``), e.g.
    #: ``('libvirt',)`` for ``libvirt.LibvirtDriver``; lower case.
    compute_drivers: ty.ClassVar[tuple[str, ...]] = ()

    #: Whether this driver stamps ``hypervisor_type``/``vm_mode``: set
    #: to ``False`` on an instance by :func:`load_driver` when the driver
    #: was only guessed (:class:`DriverChoice`).
    stamps: bool = True

    #: Rows of the compatibility matrix (doc/source/matrix.rst):
    #: ``(label, {option of [snapshot_ext_<name>]: value})``; empty means
    #: one row, labelled :attr:`name`, with the defaults.
    matrix_variants: ty.ClassVar[
        tuple[tuple[str, dict[str, str]], ...]] = ()

    #: oslo.config options of group ``[snapshot_ext_<name>]``.  Read from
    #: the class by ``opts.list_opts``; must not need an instance.
    CONFIG_OPTS: ty.ClassVar[ty.Sequence[cfg.Opt]] = []

    #: Option named in the error when :attr:`disk_formats` is invalid.
    #: ``None`` means the list is fixed in code (a driver bug).
    formats_option: ty.ClassVar[str | None] = None

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        """Register this driver's options on ``conf`` and validate.

        :param conf: the consumer's ``oslo_config.cfg.ConfigOpts`` (Nova's
            ``CONF`` inside nova-api, a private one in the CLI and tests).
        :raises ConfigurationError: an option value or the declared
            formats/properties break an invariant.
        :raises TypeError: the subclass did not set :attr:`name`.
        """
        if not self.name or not isinstance(self.name, str):
            raise TypeError('%s must set the class attribute "name"'
                            % type(self).__name__)
        self.conf = conf
        self.register_opts(conf)
        self.group_conf = conf[self.group_name()]
        self._check_invariants()

    # -- options --------------------------------------------------------

    @classmethod
    def group_name(cls) -> str:
        """:returns: the option group name, ``snapshot_ext_<name>``."""
        return GROUP_PREFIX + cls.name

    @classmethod
    def opt_group(cls) -> cfg.OptGroup:
        """:returns: a new ``OptGroup`` for :meth:`group_name` with help.

        Used by ``opts.list_opts`` so the sample config carries group help.
        """
        doc = (cls.__doc__ or '').strip().splitlines()
        summary = doc[0] if doc else ''
        return cfg.OptGroup(
            cls.group_name(),
            title='nova-snapshot-ext %s driver' % cls.name,
            help=('Options of the nova-snapshot-ext "%s" driver. %s'
                  % (cls.name, summary)).strip())

    @classmethod
    def register_opts(cls, conf: cfg.ConfigOpts) -> None:
        """Register :attr:`CONFIG_OPTS` in ``[snapshot_ext_<name>]``.

        Idempotent: registering the same option objects again is a no-op in
        oslo.config.

        :param conf: the consumer's ``ConfigOpts``.
        """
        conf.register_group(cls.opt_group())
        conf.register_opts(cls.CONFIG_OPTS, group=cls.group_name())

    def _option(self, name: str) -> ty.Any:
        """Read option ``name`` of this driver's group.

        :raises ConfigurationError: the configured value does not parse or
            is not one of the option's choices.
        """
        try:
            return self.group_conf[name]
        except (cfg.ConfigFileValueError, ValueError) as exc:
            raise exception.ConfigurationError(
                group=self.group_name(), option=name,
                reason=str(exc)) from exc

    # -- the declaration ------------------------------------------------

    @property
    @abc.abstractmethod
    def disk_formats(self) -> tuple[str, ...]:
        """Glance disk formats the hypervisor reads, most preferred first.

        The activation planner intersects this with the formats the target
        Glance allows.  Every value is a Glance ``disk_format`` name (see
        :data:`GLANCE_DISK_FORMATS`); the tuple is non-empty and has no
        duplicates.

        :returns: e.g. ``('qcow2', 'raw', 'vmdk')``.
        :raises ConfigurationError: an option this depends on is invalid.
        """

    @property
    @abc.abstractmethod
    def hypervisor_type(self) -> str | None:
        """Value stamped as the image property ``hypervisor_type``.

        Nova's ``ImagePropertiesFilter`` matches it against each host's
        ``supported_instances``.

        :returns: one of :data:`HYPERVISOR_TYPES`, or ``None`` to stamp
            nothing.
        :raises ConfigurationError: an option this depends on is invalid.
        """

    @property
    def vm_mode(self) -> str | None:
        """Value stamped as the image property ``vm_mode``.

        :returns: one of :data:`VM_MODES`, or ``None`` (the default) to
            stamp nothing.
        """
        return None

    @property
    def supports_quiesce(self) -> bool:
        """Whether the hypervisor can quiesce the guest before snapshots.

        ``False`` by default: Nova then snapshots the volumes without
        quiescing (or fails with 400 if the image sets
        ``os_require_quiesce=yes``).
        """
        return False

    def image_properties(self) -> dict[str, str]:
        """Image properties this driver stamps on the snapshot image.

        The default builds the dict from :attr:`hypervisor_type` and
        :attr:`vm_mode`, leaving out ``None`` values.  Keys are limited to
        :data:`IMAGE_PROPERTY_KEYS`; values are strings (Glance custom
        properties are strings).

        :returns: e.g. ``{'hypervisor_type': 'vz', 'vm_mode': 'exe'}``;
            may be empty; always empty for a guessed driver
            (:attr:`stamps` false).
        """
        props: dict[str, str] = {}
        if not self.stamps:
            return props
        if self.hypervisor_type is not None:
            props['hypervisor_type'] = self.hypervisor_type
        if self.vm_mode is not None:
            props['vm_mode'] = self.vm_mode
        return props

    def capabilities(self) -> dict[str, ty.Any]:
        """JSON-serialisable summary of the declaration.

        :returns: a dict with ``name`` (str), ``hypervisor_types`` (list of
            str), ``hypervisor_type`` (str or None), ``disk_formats`` (list
            of str, preference order), ``supports_quiesce`` (bool) and
            ``image_properties`` (dict of str to str; empty for a
            guessed driver).  See the class docstring for a sample.
        """
        return {
            'name': self.name,
            'hypervisor_types': list(self.hypervisor_types),
            'hypervisor_type': self.hypervisor_type,
            'disk_formats': list(self.disk_formats),
            'supports_quiesce': bool(self.supports_quiesce),
            'image_properties': dict(self.image_properties()),
        }

    def __repr__(self) -> str:
        return '<%s name=%s>' % (type(self).__name__, self.name)

    # -- invariants -----------------------------------------------------

    def _check_invariants(self) -> None:
        group = self.group_name()
        fmt_option = self.formats_option or 'disk_formats'
        formats = self.disk_formats
        if isinstance(formats, str) or not isinstance(formats, tuple):
            raise exception.ConfigurationError(
                group=group, option=fmt_option,
                reason=_("driver '%(name)s' must declare disk_formats as a "
                         "tuple, got %(type)s") %
                {'name': self.name, 'type': type(formats).__name__})
        if not formats:
            raise exception.ConfigurationError(
                group=group, option=fmt_option,
                reason=_("driver '%s' declares no disk format; at least one "
                         "is required") % self.name)
        unknown = [f for f in formats if f not in GLANCE_DISK_FORMATS]
        if unknown:
            raise exception.ConfigurationError(
                group=group, option=fmt_option,
                reason=_("%(unknown)s not Glance disk_format name(s); "
                         "known: %(known)s") %
                {'unknown': ', '.join(map(str, unknown)),
                 'known': ', '.join(sorted(GLANCE_DISK_FORMATS))})
        if len(set(formats)) != len(formats):
            raise exception.ConfigurationError(
                group=group, option=fmt_option,
                reason=_("duplicate disk formats in %s") %
                ', '.join(formats))

        hv_type = self.hypervisor_type
        if hv_type is not None and hv_type not in HYPERVISOR_TYPES:
            raise exception.ConfigurationError(
                group=group, option='hypervisor_type',
                reason=_("'%(value)s' is not a hypervisor_type; known: "
                         "%(known)s") %
                {'value': hv_type,
                 'known': ', '.join(sorted(HYPERVISOR_TYPES))})

        props = self.image_properties()
        for key, value in props.items():
            if key not in IMAGE_PROPERTY_KEYS:
                raise exception.ConfigurationError(
                    group=group, option=key,
                    reason=_("drivers may only stamp %s") %
                    ', '.join(IMAGE_PROPERTY_KEYS))
            if not isinstance(value, str):
                raise exception.ConfigurationError(
                    group=group, option=key,
                    reason=_("image property values must be strings, got "
                             "%s") % type(value).__name__)
        vm_mode = props.get('vm_mode')
        if vm_mode is not None and vm_mode not in VM_MODES:
            raise exception.ConfigurationError(
                group=group, option='vm_mode',
                reason=_("'%(value)s' is not a vm_mode; known: "
                         "%(known)s") %
                {'value': vm_mode, 'known': ', '.join(sorted(VM_MODES))})


# -- discovery and loading -------------------------------------------------

def _raise_load_error(manager: ty.Any, entrypoint: ty.Any,
                      exc: BaseException) -> ty.NoReturn:
    """stevedore ``on_load_failure_callback`` for :func:`load_driver`."""
    raise exception.DriverLoadError(
        name=getattr(entrypoint, 'name', entrypoint),
        reason='%s: %s' % (type(exc).__name__, exc)) from exc


def _log_load_error(manager: ty.Any, entrypoint: ty.Any,
                    exc: BaseException) -> None:
    """stevedore ``on_load_failure_callback`` for listing drivers."""
    LOG.warning('Snapshot driver entry point %s could not be loaded and is '
                'skipped: %s', getattr(entrypoint, 'name', entrypoint), exc)


def _driver_manager(name: str) -> sd_driver.DriverManager:
    """Build the stevedore manager for one driver (a seam for tests)."""
    return sd_driver.DriverManager(
        NAMESPACE, name, invoke_on_load=False,
        on_load_failure_callback=_raise_load_error)


def _extension_manager() -> sd_extension.ExtensionManager:
    """Build the stevedore manager for all drivers (a seam for tests)."""
    return sd_extension.ExtensionManager(
        NAMESPACE, invoke_on_load=False,
        on_load_failure_callback=_log_load_error)


def driver_classes() -> dict[str, type[SnapshotDriver]]:
    """Installed driver classes, without instantiating any.

    Entry points that fail to import, or that do not name a
    :class:`SnapshotDriver` subclass, are logged and left out.

    :returns: ``{name: class}`` in name order, e.g.
        ``{'fake': FakeDriver, 'hyperv': HyperVDriver, ...}``.
    """
    found: dict[str, type[SnapshotDriver]] = {}
    for ext in _extension_manager():
        plugin = ext.plugin
        if not (isinstance(plugin, type) and
                issubclass(plugin, SnapshotDriver)):
            LOG.warning('Snapshot driver entry point %s does not name a '
                        'SnapshotDriver subclass and is skipped', ext.name)
            continue
        found.setdefault(ext.name, plugin)
    return {name: found[name] for name in sorted(found)}


def driver_names() -> list[str]:
    """Names of the installed drivers that load, sorted.

    :returns: e.g. ``['fake', 'hyperv', 'ironic', 'libvirt', ...]``.
    """
    return list(driver_classes())


def configured_driver_name(conf: cfg.ConfigOpts) -> str | None:
    """The driver named by ``[snapshot_ext] driver``, if any.

    :returns: the option's value if it is registered on ``conf`` and set,
        else ``None``.
    """
    try:
        value = conf.snapshot_ext.driver
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
        return None
    return value or None


def compute_driver_map() -> dict[str, str]:
    """``compute_driver`` family -> driver name, from the entry points.

    Each installed driver's :attr:`SnapshotDriver.compute_drivers`.

    :returns: e.g. ``{'compute_hyperv': 'hyperv', 'fake': 'fake', ...}``.
    """
    found: dict[str, str] = {}
    for name, cls in driver_classes().items():
        for family in cls.compute_drivers:
            found.setdefault(family.lower(), name)
    return found


@dataclasses.dataclass(frozen=True)
class DriverChoice:
    """Which driver, and how it was chosen.

    :ivar name: the driver name.
    :ivar source: ``'configured'`` (``[snapshot_ext] driver``),
        ``'inferred'`` (from a ``[DEFAULT] compute_driver`` a driver
        claims) or ``'guessed'`` (:data:`DEFAULT_DRIVER`: neither is set,
        or ``compute_driver`` names a family no driver claims).
    :ivar reason: the choice in words, naming the option (and the file
        that set it, when oslo.config knows).
    """

    name: str
    source: str
    reason: str

    @property
    def known(self) -> bool:
        """Configured or inferred: the driver may stamp properties."""
        return self.source != 'guessed'


def _where(conf: cfg.ConfigOpts, name: str, group: str | None) -> str:
    try:
        loc = conf.get_location(name, group)
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError, AttributeError):
        return ''
    return ' in %s' % loc.detail if loc and loc.detail else ''


def _compute_driver(conf: cfg.ConfigOpts) -> str | None:
    try:
        value = conf.compute_driver
    except (cfg.NoSuchOptError, cfg.NoSuchGroupError, AttributeError,
            KeyError, LookupError):
        return None
    return value.strip() if isinstance(value, str) and value.strip() \
        else None


def choose_driver(conf: cfg.ConfigOpts) -> DriverChoice:
    """The driver ``conf`` names, infers, or (failing both) guesses.

    ``[snapshot_ext] driver`` when set; else the driver whose
    :attr:`~SnapshotDriver.compute_drivers` holds the first dotted
    component of Nova's ``[DEFAULT] compute_driver``
    (``libvirt.LibvirtDriver`` -> ``libvirt``,
    ``compute_hyperv.driver.HyperVDriver`` -> ``hyperv``); else
    :data:`DEFAULT_DRIVER`, guessed (the option is not registered -- not
    running inside Nova --, unset -- usual on API hosts --, or names a
    family no installed driver claims, e.g. ``powervm`` or a typo).

    :param conf: the consumer's ``ConfigOpts``.
    :returns: a :class:`DriverChoice`.
    """
    configured = configured_driver_name(conf)
    if configured:
        return DriverChoice(configured, 'configured',
                            '[snapshot_ext] driver = %s%s' % (
                                configured, _where(conf, 'driver',
                                                   'snapshot_ext')))
    compute = _compute_driver(conf)
    unstamped = ('so %s is assumed for its disk formats and no '
                 'hypervisor_type or vm_mode is stamped (a wrong one makes '
                 "Nova's ImagePropertiesFilter refuse every host); set "
                 "[snapshot_ext] driver to the compute hosts' hypervisor"
                 % DEFAULT_DRIVER)
    if compute is None:
        return DriverChoice(DEFAULT_DRIVER, 'guessed', (
            'neither [snapshot_ext] driver nor [DEFAULT] compute_driver is '
            'set (usual on API hosts), ' + unstamped))
    family = compute.split('.', 1)[0].lower()
    known = compute_driver_map()
    name = known.get(family)
    if name is None:
        return DriverChoice(DEFAULT_DRIVER, 'guessed', (
            '[DEFAULT] compute_driver = %s%s names no installed snapshot '
            'driver (known: %s), %s' % (
                compute, _where(conf, 'compute_driver', None),
                ', '.join(sorted(known)), unstamped)))
    return DriverChoice(name, 'inferred', (
        'inferred from [DEFAULT] compute_driver = %s%s (set '
        '[snapshot_ext] driver to choose)' % (
            compute, _where(conf, 'compute_driver', None))))


def infer_driver_name(conf: cfg.ConfigOpts) -> str:
    """The driver Nova's ``[DEFAULT] compute_driver`` points to.

    As :func:`choose_driver` without ``[snapshot_ext] driver``: the
    driver claiming the ``compute_driver`` family, else
    :data:`DEFAULT_DRIVER` (``libvirt``), the most common Nova hypervisor;
    an unknown family is logged as a warning.

    :param conf: the consumer's ``ConfigOpts``.
    :returns: a driver name, never ``None``.
    """
    compute = _compute_driver(conf)
    if compute is None:
        return DEFAULT_DRIVER
    name = compute_driver_map().get(compute.split('.', 1)[0].lower())
    if name is None:
        LOG.warning('No snapshot driver matches compute_driver %s; using '
                    '%s for its formats, stamping nothing. Set '
                    '[snapshot_ext] driver to choose one.',
                    compute, DEFAULT_DRIVER)
        return DEFAULT_DRIVER
    return name


#: Guesses already warned about in this process (by reason).
_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


def _warn_guessed(choice: DriverChoice) -> None:
    """Say once per process (and reason) that a guess stamps nothing."""
    with _WARNED_LOCK:
        if choice.reason in _WARNED:
            return
        _WARNED.add(choice.reason)
    LOG.warning('Snapshot driver %s is guessed, not known: %s',
                choice.name, choice.reason)


def load_driver(conf: cfg.ConfigOpts,
                name: str | DriverChoice | None = None) -> SnapshotDriver:
    """Load and construct a driver with the consumer's configuration.

    :param conf: the consumer's ``ConfigOpts``; the driver registers its
        ``[snapshot_ext_<name>]`` options on it.
    :param name: entry point name in ``nova_snapshot_ext.drivers`` (the
        caller knows: the driver stamps), or a :class:`DriverChoice`.
        ``None`` means :func:`choose_driver`; a guessed choice loads a
        driver that stamps nothing, and says so once per process at
        WARNING.
    :returns: the constructed :class:`SnapshotDriver`.
    :raises DriverNotFound: no driver of that name is installed;
        ``exc.kwargs['available']`` is the sorted list of installed names.
    :raises DriverLoadError: the entry point failed to import, is
        ambiguous, is not a :class:`SnapshotDriver` subclass, or its
        constructor failed for a reason other than configuration.
    :raises ConfigurationError: the driver's options are invalid.
    """
    choice = choose_driver(conf) if name is None else name
    if isinstance(choice, DriverChoice):
        name, stamps = choice.name, choice.known
        if not stamps:
            _warn_guessed(choice)
    else:
        name, stamps = choice, True
    try:
        manager = _driver_manager(name)
    except sd_exception.MultipleMatches as exc:
        raise exception.DriverLoadError(name=name, reason=str(exc)) from exc
    except (sd_exception.NoMatches, RuntimeError) as exc:
        raise exception.DriverNotFound(
            name=name, available=driver_names()) from exc
    cls = manager.driver
    if not (isinstance(cls, type) and issubclass(cls, SnapshotDriver)):
        raise exception.DriverLoadError(
            name=name,
            reason=_('%r is not a SnapshotDriver subclass') % (cls,))
    try:
        driver = cls(conf)
    except exception.ConfigurationError:
        raise
    except Exception as exc:
        raise exception.DriverLoadError(
            name=name, reason='%s: %s' % (type(exc).__name__, exc)) from exc
    driver.stamps = stamps
    LOG.debug('Loaded snapshot driver %s: %s', name, driver.capabilities())
    return driver
