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


"""The console script's configuration, without its command line.

The options every command reads (the plugin's, oslo.log's, Nova's
``compute_driver`` and ``[libvirt] virt_type`` as hints for the driver),
and loading them from files only (the demo writes its own file).
"""

from __future__ import annotations

import os

from oslo_config import cfg
from oslo_log import log as logging

from nova_snapshot_ext.cmd import checks
from nova_snapshot_ext import opts

PROJECT = 'nova-snapshot-ext'


#: Nova options read (never required) to infer the driver when the
#: plugin reads nova.conf; registered only on the CLI's own ConfigOpts.
_NOVA_HINT_OPTS = [
    (None, cfg.StrOpt('compute_driver',
                      help="Nova's compute driver; read only to infer "
                      '[snapshot_ext] driver when that is unset.')),
    ('libvirt', cfg.StrOpt('virt_type',
                           help="Nova's libvirt virt_type (read only).")),
]


def _register_nova_hints(conf: cfg.ConfigOpts) -> None:
    for group, opt in _NOVA_HINT_OPTS:
        try:
            conf.register_opt(opt, group=group)
        except cfg.DuplicateOptError:
            pass


def base_conf() -> cfg.ConfigOpts:
    """A ConfigOpts with every option the commands read (no CLI ones)."""
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    _register_nova_hints(conf)
    logging.register_options(conf)
    # Logs go to stderr so that stdout carries only the output (JSON).
    conf.set_default('use_stderr', True)
    return conf


def load_conf_files(config_files: list[str]) -> cfg.ConfigOpts:
    """A configuration from these files only (no command line).

    Used by the demo, which writes its own file.
    """
    for path in config_files:
        if not os.path.isfile(path):
            raise checks.CLIError('--config-file %s does not exist' % path)
    conf = base_conf()
    conf(args=[], project=PROJECT, default_config_files=config_files,
         default_config_dirs=[])
    return conf
