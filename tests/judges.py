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

"""The two judges of payload honesty: oslo's inspector and qemu-img.

Used on bytes downloaded back from a real Glance.  Each function raises
``AssertionError`` naming the judge and its verdict when it disagrees
with the declared disk_format.
"""

import json
import os
import shutil
import subprocess
import tempfile

from oslo_utils.imageutils import format_inspector

from nova_snapshot_ext.image import payloads

QEMU_IMG = shutil.which('qemu-img')

#: What the inspector must report per Glance disk_format.  Glance has no
#: ploop inspector: a real Parallels image must look raw to it.
INSPECTOR_VERDICT = {'ploop': 'raw'}

#: qemu has no iso driver: it opens ISO 9660 as raw.
QEMU_OPEN_AS = {'iso': 'raw'}

#: Formats for which ``qemu-img check`` exists.
QEMU_CHECKS = ('qcow2', 'vhdx', 'vmdk', 'vdi', 'parallels')


def judge_inspector(data, disk_format):
    """oslo.utils format_inspector agrees with ``disk_format``."""
    with tempfile.NamedTemporaryFile() as f:
        f.write(data)
        f.flush()
        inspector = format_inspector.detect_file_format(f.name)
    expected = INSPECTOR_VERDICT.get(disk_format, disk_format)
    if str(inspector) != expected:
        raise AssertionError('inspector sees %s, not %s'
                             % (inspector, expected))
    inspector.safety_check()


def judge_qemu(data, disk_format):
    """``qemu-img info`` opens it as that format; ``check`` passes."""
    if QEMU_IMG is None:
        raise AssertionError('qemu-img is not installed')
    fmt = QEMU_OPEN_AS.get(disk_format, payloads.qemu_format(disk_format))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'image')
        with open(path, 'wb') as f:
            f.write(data)
        info = subprocess.run(
            [QEMU_IMG, 'info', '--output=json', path],
            capture_output=True, text=True, timeout=60, check=False)
        if info.returncode != 0:
            raise AssertionError('qemu-img info failed: %s' % info.stderr)
        probed = json.loads(info.stdout)['format']
        if probed != fmt:
            raise AssertionError('qemu-img probes %s, not %s'
                                 % (probed, fmt))
        if fmt in QEMU_CHECKS:
            check = subprocess.run(
                [QEMU_IMG, 'check', '-f', fmt, path], capture_output=True,
                text=True, timeout=60, check=False)
            if check.returncode != 0:
                raise AssertionError('qemu-img check failed: %s%s'
                                     % (check.stdout, check.stderr))


def judge(data, disk_format):
    judge_inspector(data, disk_format)
    judge_qemu(data, disk_format)
