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

"""Backups of volume-backed servers: Nova's ``createBackup`` with rotation.

A backup is a volume-backed snapshot image (the same record builder,
preflight and activation as :mod:`nova_snapshot_ext.snapshot`) marked as
Nova marks a backup, then a rotation of this server's older backups of the
same ``backup_type`` (:mod:`.rotation`), and of the Cinder volume snapshots
only they named (:mod:`.cinder`).  See doc/source/backups.rst.
"""
