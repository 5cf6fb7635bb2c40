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

"""Smallest *honest* empty disk images, built in pure Python.

Glance 30 and later inspects every ``container_format=bare`` upload with
``oslo_utils.imageutils.format_inspector`` and answers HTTP 415 when the
bytes are not what ``disk_format`` claims (an empty upload is "raw").  When
a Glance refuses ``raw``, a metadata-only snapshot image is activated by
uploading one of the payloads built here instead.

"Honest" means the bytes are a genuinely valid, empty image of the declared
format, not just something that fools the inspector:

* oslo's inspector detects the declared format (both
  ``detect_file_format()`` and the streaming ``InspectWrapper`` Glance
  uses) and ``safety_check()`` passes.  ``ploop`` has no inspector:
  Glance accepts it only when nothing recognises the bytes, so for ploop
  the verdict must be ``raw``;
* ``qemu-img info`` opens the file as that format, and probing without
  ``-f`` finds the same format;
* ``qemu-img check`` reports no errors where qemu implements it.

Every payload is built from the published format specification with
:mod:`struct`; no qemu-img is needed at run time.  The output is
deterministic: timestamps are zero and every identifier (UUID/GUID, CID)
is a fixed value derived with :func:`uuid.uuid5`, so the same bytes (and
the same Glance checksum) come out on every host.

Sizes (bytes) and virtual sizes (bytes) as built:

=========  =========  ============  ==========================================
format     bytes      virtual size  layout
=========  =========  ============  ==========================================
raw        0          0             nothing
qcow2      1 536      0             v3 header, refcount table, refcount block
                                    (512 B clusters)
vhd        2 048      0             dynamic VHD: footer copy, dynamic header,
                                    empty BAT, footer
vhdx       4 194 304  512           identifier, 2 headers, 2 region tables,
                                    1 MiB log, 1 MiB metadata, 1 MiB BAT
vmdk       3 584      65 536        monolithicSparse: header, embedded
                                    descriptor, grain directory, grain table
vdi        512        0             dynamic VDI header, zero blocks
iso        43 008     43 008        ISO 9660: system area, PVD, terminator,
                                    two path tables, root directory
ploop      1 048 576  0             Parallels "WithouFreSpacExt" v2 header,
                                    empty BAT, one 1 MiB cluster
=========  =========  ============  ==========================================

Sources: qcow2 -- qemu ``docs/interop/qcow2.txt``; vhd -- Microsoft
"Virtual Hard Disk Image Format Specification" 1.0; vhdx -- Microsoft
[MS-VHDX] 1.0/2.0; vmdk -- VMware "Virtual Disk Format 5.0"; vdi --
VirtualBox ``VDICore.h`` header layout (version 1.1); iso -- ECMA-119
(ISO 9660); ploop -- qemu ``docs/interop/parallels.txt`` (the
"WithouFreSpacExt" layout that Virtuozzo ploop image files use).
"""

from __future__ import annotations

import functools
import struct
import uuid

from nova_snapshot_ext import exception
from nova_snapshot_ext.i18n import _

__all__ = [
    'SUPPORTED_FORMATS',
    'UnsupportedPayloadFormat',
    'crc32c',
    'payload',
    'payload_size',
    'qemu_format',
    'virtual_size',
]

KiB = 1024
MiB = 1024 * KiB
SECTOR = 512

#: Namespace for every identifier written into a payload.  Identifiers
#: are ``uuid5(_UUID_NAMESPACE, '<format>/<purpose>')`` so they are stable.
_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL,
                             'https://opendev.org/nova-snapshot-ext/payloads')


def _fixed_uuid(purpose: str) -> uuid.UUID:
    """Return the fixed UUID used for ``purpose`` (e.g. ``'vdi/image'``)."""
    return uuid.uuid5(_UUID_NAMESPACE, purpose)


class UnsupportedPayloadFormat(exception.SnapshotExtException):
    """No honest empty image can be built for ``disk_format``.

    ``kwargs['disk_format']`` is the refused Glance disk_format and
    ``kwargs['supported']`` the comma-separated :data:`SUPPORTED_FORMATS`.
    """

    code = 400
    msg_fmt = _("Cannot build an honest empty image of disk_format "
                "'%(disk_format)s'; payloads exist for: %(supported)s")

    def __init__(self, message: str | None = None, **kwargs):
        kwargs.setdefault('supported', ', '.join(SUPPORTED_FORMATS))
        super().__init__(message, **kwargs)


# --- CRC32C (Castagnoli), needed by VHDX ---------------------------------

def _crc32c_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _bit in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
        table.append(crc)
    return tuple(table)


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes | bytearray) -> int:
    """CRC-32C (reflected polynomial 0x82F63B78) of ``data``.

    ``crc32c(b'123456789') == 0xE3069283`` (the standard check value).
    """
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# --- raw ------------------------------------------------------------------

def _raw() -> bytes:
    return b''


# --- qcow2 ----------------------------------------------------------------

def _qcow2() -> bytes:
    """qcow2 version 3, 512-byte clusters, virtual size 0: 1 536 bytes.

    Cluster 0 holds the header (no backing file, no L1 table since the
    disk has no guest clusters, header extension area ends immediately),
    cluster 1 the one-entry refcount table and cluster 2 the refcount
    block (16-bit refcounts) that counts clusters 0-2 once each.
    """
    cluster_bits = 9
    cluster = 1 << cluster_bits
    refcount_table_offset = 1 * cluster
    refcount_block_offset = 2 * cluster
    header_length = 104
    header = struct.pack(
        '>4sIQIIQIIQQIIQQQQII',
        b'QFI\xfb',             # magic
        3,                      # version
        0, 0,                   # backing file offset, size: none
        cluster_bits,
        0,                      # virtual size in bytes
        0,                      # crypt_method: none
        0, 0,                   # l1_size, l1_table_offset: no guest data
        refcount_table_offset,
        1,                      # refcount_table_clusters
        0, 0,                   # nb_snapshots, snapshots_offset
        0, 0, 0,                # incompatible/compatible/autoclear features
        4,                      # refcount_order: 16-bit refcounts
        header_length,
    )
    assert len(header) == header_length
    # Header extensions start at header_length; a zero type/length pair is
    # the end-of-extensions marker, and the rest of the cluster is zero.
    hdr_cluster = header.ljust(cluster, b'\x00')
    table = struct.pack('>Q', refcount_block_offset).ljust(cluster, b'\x00')
    block = struct.pack('>3H', 1, 1, 1).ljust(cluster, b'\x00')
    return hdr_cluster + table + block


# --- vhd ------------------------------------------------------------------

def _ones_complement_checksum(data: bytes | bytearray) -> int:
    return (~sum(data)) & 0xFFFFFFFF


def _vhd() -> bytes:
    """Dynamic VHD with virtual size 0: 2 048 bytes.

    Layout: footer copy (512) + dynamic disk header (1 024) + block
    allocation table with zero entries + footer (512).  Timestamps are 0
    (2000-01-01T00:00:00Z) and the unique id is fixed.
    """
    dyn_header_offset = SECTOR
    bat_offset = dyn_header_offset + 1024
    footer = bytearray(struct.pack(
        '>8sIIQI4sI4sQQIII16sB',
        b'conectix',
        2,                      # features: reserved bit always set
        0x00010000,             # file format version 1.0
        dyn_header_offset,      # data offset: the dynamic header
        0,                      # timestamp
        b'nsxt',                # creator application
        0x00010000,             # creator version
        b'Wi2k',                # creator host OS
        0,                      # original size
        0,                      # current size
        0,                      # geometry C/H/S: 0/0/0 for 0 sectors
        3,                      # disk type: dynamic
        0,                      # checksum (filled below)
        _fixed_uuid('vhd/unique-id').bytes,
        0,                      # saved state
    ).ljust(SECTOR, b'\x00'))
    struct.pack_into('>I', footer, 64, _ones_complement_checksum(footer))

    dyn = bytearray(struct.pack(
        '>8sQQIIII16sI',
        b'cxsparse',
        0xFFFFFFFFFFFFFFFF,     # data offset: unused
        bat_offset,             # table offset
        0x00010000,             # header version 1.0
        0,                      # max table entries: no blocks
        2 * MiB,                # block size (the default)
        0,                      # checksum (filled below)
        b'\x00' * 16,           # parent unique id: none
        0,                      # parent timestamp
    ).ljust(1024, b'\x00'))
    struct.pack_into('>I', dyn, 36, _ones_complement_checksum(dyn))
    # A BAT with zero entries takes no space; the footer follows.
    return bytes(footer) + bytes(dyn) + bytes(footer)


# --- vhdx -----------------------------------------------------------------

_VHDX_BAT_GUID = uuid.UUID('2DC27766-F623-4200-9D64-115E9BFD4A08')
_VHDX_METADATA_GUID = uuid.UUID('8B7CA206-4790-4B9A-B8FE-575F050F886E')
_VHDX_FILE_PARAMETERS = uuid.UUID('CAA16737-FA36-4D43-B3B6-33F0AA44E76B')
_VHDX_VIRTUAL_DISK_SIZE = uuid.UUID('2FA54224-CD1B-4876-B211-5DBED83BF4B8')
_VHDX_PAGE_83_DATA = uuid.UUID('BECA12AB-B2E6-4523-93EF-C309E000C746')
_VHDX_LOGICAL_SECTOR = uuid.UUID('8141BF1D-A96F-4709-BA47-F233A8FAAB5F')
_VHDX_PHYSICAL_SECTOR = uuid.UUID('CDA348C7-445D-4471-9CC9-E9885251C556')

#: One logical sector.  A virtual size of 0 is degenerate in [MS-VHDX]
#: (the BAT entry formula gives -1 entries) and qemu then demands an 8 MiB
#: BAT; with one sector the BAT has exactly one (not present) entry.
_VHDX_VIRTUAL_SIZE = 512
#: qemu only implements 512-byte logical sectors.
_VHDX_LOGICAL_SECTOR_SIZE = 512

# Metadata entry flags
_VHDX_IS_VIRTUAL_DISK = 0x2
_VHDX_IS_REQUIRED = 0x4


def _vhdx_header(sequence: int) -> bytes:
    header = bytearray(struct.pack(
        '<4sIQ16s16s16sHHIQ',
        b'head',
        0,                      # checksum (filled below)
        sequence,
        _fixed_uuid('vhdx/file-write').bytes_le,
        _fixed_uuid('vhdx/data-write').bytes_le,
        b'\x00' * 16,           # log guid: zero, the log is empty
        0,                      # log version
        1,                      # version
        1 * MiB,                # log length
        1 * MiB,                # log offset
    ).ljust(4 * KiB, b'\x00'))
    struct.pack_into('<I', header, 4, crc32c(header))
    return bytes(header).ljust(64 * KiB, b'\x00')


def _vhdx() -> bytes:
    """VHDX with a 512-byte virtual size: 4 MiB (4 194 304 bytes).

    [MS-VHDX] requires every region and the log to be 1 MiB aligned and a
    multiple of 1 MiB long, so the smallest layout that holds all of them
    inside the file is::

        0 MiB   header section: file type identifier (64 KiB), header 1
                (64 KiB), header 2 (64 KiB), region table 1 (64 KiB),
                region table 2 (64 KiB), reserved
        1 MiB   log (1 MiB, empty: log guid is zero)
        2 MiB   metadata region (1 MiB): table + 5 items at +64 KiB
        3 MiB   BAT region (1 MiB, all entries "not present")

    Block size 1 MiB, logical sector 512 B, physical sector 4 KiB.
    """
    block_size = 1 * MiB
    log_offset, meta_offset, bat_offset = 1 * MiB, 2 * MiB, 3 * MiB
    total = bat_offset + 1 * MiB

    ident = struct.pack('<8s', b'vhdxfile')
    ident += 'nova-snapshot-ext'.encode('utf-16-le')
    ident = ident.ljust(64 * KiB, b'\x00')

    region = bytearray(struct.pack(
        '<4sIII', b'regi', 0, 2, 0))
    for guid, offset in ((_VHDX_BAT_GUID, bat_offset),
                         (_VHDX_METADATA_GUID, meta_offset)):
        region += struct.pack('<16sQII', guid.bytes_le, offset, 1 * MiB, 1)
    region = region.ljust(64 * KiB, b'\x00')
    struct.pack_into('<I', region, 4, crc32c(region))

    items = (
        # (guid, flags, value)
        (_VHDX_FILE_PARAMETERS, _VHDX_IS_REQUIRED,
         struct.pack('<II', block_size, 0)),
        (_VHDX_VIRTUAL_DISK_SIZE, _VHDX_IS_VIRTUAL_DISK | _VHDX_IS_REQUIRED,
         struct.pack('<Q', _VHDX_VIRTUAL_SIZE)),
        (_VHDX_PAGE_83_DATA, _VHDX_IS_VIRTUAL_DISK | _VHDX_IS_REQUIRED,
         _fixed_uuid('vhdx/page83').bytes_le),
        (_VHDX_LOGICAL_SECTOR, _VHDX_IS_VIRTUAL_DISK | _VHDX_IS_REQUIRED,
         struct.pack('<I', _VHDX_LOGICAL_SECTOR_SIZE)),
        (_VHDX_PHYSICAL_SECTOR, _VHDX_IS_VIRTUAL_DISK | _VHDX_IS_REQUIRED,
         struct.pack('<I', 4096)),
    )
    table = bytearray(struct.pack('<8sHH20s', b'metadata', 0, len(items),
                                  b'\x00' * 20))
    data = bytearray()
    item_base = 64 * KiB        # items start after the 64 KiB table area
    for guid, flags, value in items:
        table += struct.pack('<16sIIII', guid.bytes_le,
                             item_base + len(data), len(value), flags, 0)
        data += value
    metadata = (bytes(table).ljust(item_base, b'\x00') + bytes(data)).ljust(
        1 * MiB, b'\x00')

    out = bytearray(total)
    out[0:64 * KiB] = ident
    out[64 * KiB:128 * KiB] = _vhdx_header(1)
    out[128 * KiB:192 * KiB] = _vhdx_header(2)
    out[192 * KiB:256 * KiB] = region
    out[256 * KiB:320 * KiB] = region
    assert log_offset >= 320 * KiB
    out[meta_offset:meta_offset + 1 * MiB] = metadata
    # The log and the BAT stay zero: an empty log, no blocks present.
    return bytes(out)


# --- vmdk -----------------------------------------------------------------

_VMDK_GRAIN_SECTORS = 128               # 64 KiB grains (the usual size)
_VMDK_GTES_PER_GT = 512
_VMDK_CAPACITY_SECTORS = _VMDK_GRAIN_SECTORS    # one grain: 64 KiB


def _vmdk() -> bytes:
    """monolithicSparse VMDK, capacity 128 sectors (64 KiB): 3 584 bytes.

    qemu refuses a 0-sector sparse extent, so the disk holds exactly one
    (unallocated) grain.  Sector 0 is the sparse header, sector 1 the
    embedded descriptor (oslo requires it at exactly sector 1), sector 2
    the one-entry grain directory and sectors 3-6 the single grain table
    (512 entries, all zero = grain not allocated).
    """
    desc_sector, desc_sectors = 1, 1
    gd_sector = desc_sector + desc_sectors
    gt_sector = gd_sector + 1
    gt_sectors = _VMDK_GTES_PER_GT * 4 // SECTOR
    overhead = gt_sector + gt_sectors

    cid = uuid.UUID(int=_fixed_uuid('vmdk/cid').int).hex[:8]
    descriptor = (
        '# Disk DescriptorFile\n'
        'version=1\n'
        'CID=%(cid)s\n'
        'parentCID=ffffffff\n'
        'createType="monolithicSparse"\n'
        '\n'
        '# Extent description\n'
        'RW %(sectors)d SPARSE "empty.vmdk"\n'
        '\n'
        '# The Disk Data Base\n'
        '#DDB\n'
        '\n'
        'ddb.virtualHWVersion = "4"\n'
        'ddb.geometry.cylinders = "0"\n'
        'ddb.geometry.heads = "16"\n'
        'ddb.geometry.sectors = "63"\n'
        'ddb.adapterType = "ide"\n'
    ) % {'cid': cid, 'sectors': _VMDK_CAPACITY_SECTORS}
    desc = descriptor.encode('ascii')
    assert len(desc) <= desc_sectors * SECTOR

    header = struct.pack(
        '<4sIIQQQQIQQQBccccH',
        b'KDMV',
        1,                      # version
        1,                      # flags: valid new-line detection test
        _VMDK_CAPACITY_SECTORS,
        _VMDK_GRAIN_SECTORS,
        desc_sector,
        desc_sectors,
        _VMDK_GTES_PER_GT,
        0,                      # redundant grain directory: none
        gd_sector,
        overhead,               # sectors of metadata before grain data
        0,                      # unclean shutdown: no
        b'\n', b' ', b'\r', b'\n',
        0,                      # compression: none
    ).ljust(SECTOR, b'\x00')
    gd = struct.pack('<I', gt_sector).ljust(SECTOR, b'\x00')
    gt = b'\x00' * (gt_sectors * SECTOR)
    return header + desc.ljust(desc_sectors * SECTOR, b'\x00') + gd + gt


# --- vdi ------------------------------------------------------------------

def _vdi() -> bytes:
    """Dynamic VDI (header version 1.1) with virtual size 0: 512 bytes.

    One header sector; the block map and data would start at 512 but the
    image has zero blocks, so the file ends there.
    """
    pre_header = b'<<< QEMU VM Virtual Disk Image >>>\n'
    header = struct.pack(
        '<64s5I256s7IQ4I16s16s16s16s',
        pre_header,
        0xBEDA107F,             # signature
        0x00010001,             # version 1.1
        0x180,                  # size of the header that follows
        1,                      # image type: dynamic
        0,                      # image flags
        b'',                    # description
        SECTOR,                 # block map offset
        SECTOR,                 # data offset
        0, 0, 0,                # legacy geometry C/H/S
        SECTOR,                 # sector size
        0,                      # unused
        0,                      # disk size in bytes
        1 * MiB,                # block size
        0,                      # block extra data
        0,                      # blocks in image
        0,                      # blocks allocated
        _fixed_uuid('vdi/image').bytes,
        _fixed_uuid('vdi/last-snapshot').bytes,
        b'\x00' * 16,           # link uuid
        b'\x00' * 16,           # parent uuid
    )
    return header.ljust(SECTOR, b'\x00')


# --- iso ------------------------------------------------------------------

_ISO_BLOCK = 2048


def _both_u16(value: int) -> bytes:
    return struct.pack('<H', value) + struct.pack('>H', value)


def _both_u32(value: int) -> bytes:
    return struct.pack('<I', value) + struct.pack('>I', value)


def _iso_dir_record(extent: int, size: int, name: bytes) -> bytes:
    """An ISO 9660 directory record for a directory (flags 0x02)."""
    length = 33 + len(name)
    length += length % 2        # records are padded to an even length
    record = (
        struct.pack('<BB', length, 0)
        + _both_u32(extent)
        + _both_u32(size)
        + struct.pack('<7B', 100, 1, 1, 0, 0, 0, 0)   # 2000-01-01 00:00 UTC
        + struct.pack('<BBB', 0x02, 0, 0)             # directory, no gaps
        + _both_u16(1)                                # volume sequence
        + struct.pack('<B', len(name)) + name
    )
    return record.ljust(length, b'\x00')


def _iso() -> bytes:
    """ISO 9660 volume with an empty root directory: 43 008 bytes.

    Blocks of 2 KiB: 0-15 system area (zero), 16 primary volume
    descriptor, 17 volume descriptor set terminator, 18 type-L path table,
    19 type-M path table, 20 root directory ("." and "..").  The inspector
    reports the volume size (21 blocks) as the virtual size; qemu has no
    ISO driver and opens the file as ``raw``.
    """
    pvd_lba, term_lba, lpath_lba, mpath_lba, root_lba = 16, 17, 18, 19, 20
    blocks = root_lba + 1
    path_table_size = 10        # one 8+1 byte record, padded to even

    def a_chars(text: str, length: int) -> bytes:
        return text.encode('ascii').ljust(length, b' ')

    no_date = b'0' * 16 + b'\x00'               # "not specified"
    pvd = (
        struct.pack('<B5sBB', 1, b'CD001', 1, 0)
        + a_chars('', 32)                       # system identifier
        + a_chars('EMPTY', 32)                  # volume identifier
        + b'\x00' * 8
        + _both_u32(blocks)                     # volume space size
        + b'\x00' * 32
        + _both_u16(1)                          # volume set size
        + _both_u16(1)                          # volume sequence number
        + _both_u16(_ISO_BLOCK)                 # logical block size
        + _both_u32(path_table_size)
        + struct.pack('<I', lpath_lba) + struct.pack('<I', 0)
        + struct.pack('>I', mpath_lba) + struct.pack('>I', 0)
        + _iso_dir_record(root_lba, _ISO_BLOCK, b'\x00')
        + a_chars('', 128)                      # volume set identifier
        + a_chars('', 128)                      # publisher
        + a_chars('', 128)                      # data preparer
        + a_chars('NOVA-SNAPSHOT-EXT', 128)     # application
        + a_chars('', 37)                       # copyright file
        + a_chars('', 37)                       # abstract file
        + a_chars('', 37)                       # bibliographic file
        + no_date * 4                           # creation/mod/exp/effective
        + struct.pack('<BB', 1, 0)              # file structure version
    )
    assert len(pvd) == 883, len(pvd)
    pvd = pvd.ljust(_ISO_BLOCK, b'\x00')
    terminator = struct.pack('<B5sB', 255, b'CD001', 1).ljust(
        _ISO_BLOCK, b'\x00')
    # Path table record: name length 1, ext attr 0, extent, parent 1, name 0
    lpath = (struct.pack('<BBIH', 1, 0, root_lba, 1) + b'\x00\x00').ljust(
        _ISO_BLOCK, b'\x00')
    mpath = (struct.pack('>BBIH', 1, 0, root_lba, 1) + b'\x00\x00').ljust(
        _ISO_BLOCK, b'\x00')
    root = (_iso_dir_record(root_lba, _ISO_BLOCK, b'\x00')
            + _iso_dir_record(root_lba, _ISO_BLOCK, b'\x01')).ljust(
        _ISO_BLOCK, b'\x00')
    image = (b'\x00' * (pvd_lba * _ISO_BLOCK) + pvd + terminator + lpath
             + mpath + root)
    assert image[term_lba * _ISO_BLOCK + 1:][:5] == b'CD001'
    return image


# --- ploop (Parallels expanded disk) --------------------------------------

_PLOOP_CLUSTER = 1 * MiB


def _ploop() -> bytes:
    """Parallels "WithouFreSpacExt" v2 image, virtual size 0: 1 MiB.

    The 64-byte header with an empty BAT is followed by zeros up to the
    end of the first 1 MiB cluster; ``data_off`` (in sectors) points there,
    where guest clusters would start.  The header is not marked in use.

    qemu accepts clusters down to 512 B (a 512-byte file), but 1 MiB is
    the cluster size the ploop tools and qemu create by default, and ploop
    keeps data cluster-aligned, so this is the smallest layout we can call
    a genuine ploop image rather than only a qemu-readable one.
    """
    cluster_sectors = _PLOOP_CLUSTER // SECTOR
    data_off = cluster_sectors
    header = struct.pack(
        '<16sIIIIIQIIIQ',
        b'WithouFreSpacExt',
        2,                      # version
        16,                     # heads
        0,                      # cylinders
        cluster_sectors,        # "tracks": sectors per cluster
        0,                      # BAT entries
        0,                      # disk size in sectors
        0,                      # in-use marker: cleanly closed
        data_off,               # first data sector
        0,                      # flags
        0,                      # header extension offset: none
    )
    assert len(header) == 64
    return header.ljust(data_off * SECTOR, b'\x00')


# --- public interface -----------------------------------------------------

_BUILDERS = {
    'raw': _raw,
    'qcow2': _qcow2,
    'vhd': _vhd,
    'vhdx': _vhdx,
    'vmdk': _vmdk,
    'vdi': _vdi,
    'iso': _iso,
    'ploop': _ploop,
}

#: Glance ``disk_format`` names for which :func:`payload` builds an honest
#: empty image, smallest first after ``raw``.
SUPPORTED_FORMATS: tuple[str, ...] = (
    'raw', 'vdi', 'qcow2', 'vhd', 'vmdk', 'iso', 'ploop', 'vhdx')

_QEMU_FORMATS = {'vhd': 'vpc', 'ploop': 'parallels'}

_VIRTUAL_SIZES = {
    'vmdk': _VMDK_CAPACITY_SECTORS * SECTOR,
    'iso': 21 * _ISO_BLOCK,
    'vhdx': _VHDX_VIRTUAL_SIZE,
}


def _check(disk_format: str) -> None:
    if disk_format not in SUPPORTED_FORMATS:
        raise UnsupportedPayloadFormat(disk_format=disk_format)


@functools.lru_cache(maxsize=None)
def payload(disk_format: str) -> bytes:
    """Return the smallest honest empty image of Glance ``disk_format``.

    :param disk_format: a Glance disk_format name from
        :data:`SUPPORTED_FORMATS` (``'raw'``, ``'qcow2'``, ``'vhd'``, ...).
    :returns: the image bytes; ``b''`` for ``'raw'``.  The same bytes are
        returned on every call and every host.
    :raises UnsupportedPayloadFormat: for any other ``disk_format`` (for
        example ``'ami'``/``'aki'``/``'ari'``, which have no on-disk format
        of their own, or ``'qed'``, which Glance always bans).
    """
    _check(disk_format)
    return _BUILDERS[disk_format]()


def payload_size(disk_format: str) -> int:
    """Return ``len(payload(disk_format))`` in bytes.

    :raises UnsupportedPayloadFormat: as :func:`payload`.
    """
    return len(payload(disk_format))


def virtual_size(disk_format: str) -> int:
    """Return the virtual (guest-visible) size of the payload in bytes.

    0 for every format except ``vmdk`` (65 536: qemu cannot open a
    zero-sector sparse extent, so the disk has one unallocated 64 KiB
    grain), ``vhdx`` (512: one logical sector, see :func:`_vhdx`) and
    ``iso`` (43 008: the volume itself).  This is what both oslo's
    inspector and ``qemu-img info`` report.

    :raises UnsupportedPayloadFormat: as :func:`payload`.
    """
    _check(disk_format)
    return _VIRTUAL_SIZES.get(disk_format, 0)


def qemu_format(disk_format: str) -> str:
    """Return the qemu-img format name for a Glance ``disk_format``.

    ``'vhd'`` -> ``'vpc'``, ``'ploop'`` -> ``'parallels'``, otherwise the
    name itself (``'iso'`` stays ``'iso'``, although qemu reads an ISO
    image with its ``raw`` driver).  Pure mapping: no support check.
    """
    return _QEMU_FORMATS.get(disk_format, disk_format)
