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

"""What the demo and the tests serve next to an embedded Glance.

:func:`write_config` writes an ordinary config file for an embedded
Glance (``[snapshot_ext_glance] auth_type = admin_token`` whose token the
embedded Glance reads as ``user:project:roles``); :class:`ObjectServer`
serves location objects on 127.0.0.1 (issue 4): the plugin's own valid
empty image of :func:`location_format_for` the driver (qcow2 for libvirt,
1536 B, the same bytes an upload would send), which Glance reads and
hashes.  The ``demo`` command itself is :mod:`nova_snapshot_ext.cmd.demo`.
"""

from __future__ import annotations

import http.server
import threading
import typing as ty

from oslo_config import cfg

from nova_snapshot_ext import driver as driver_mod
from nova_snapshot_ext import exception
from nova_snapshot_ext.image import locations
from nova_snapshot_ext.image import payloads

#: Path and disk_format of the object the location demo serves.
LOCATION_PATH = '/nova-snapshot-ext/empty.%s'
#: Used when the driver reads it; else the first non-empty format the
#: driver reads that the plugin checks with the inspector.
LOCATION_FORMAT = 'qcow2'

LOCATION_CONFIG = """
activation_method = location-first
location_url = {url}
location_disk_format = {disk_format}
"""


class ObjectServer:
    """A tiny read-only HTTP server on 127.0.0.1 for location objects.

    Serves ``GET`` and ``HEAD`` (with ``Content-Length``, which Glance's
    http store reads for the size) of the byte strings in :attr:`objects`,
    404 for any other path.  Runs in a daemon thread; use as a context
    manager or call :meth:`start` / :meth:`stop`.

    :param objects: path (``'/x.qcow2'``) -> bytes; may be changed while
        running.
    :param port: the port to listen on (default 0: any free one).
    """

    def __init__(self, objects: dict[str, bytes] | None = None,
                 port: int = 0):
        self.objects: dict[str, bytes] = dict(objects or {})
        self._port = port
        self.requests: list[tuple[str, str]] = []
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, body: bool) -> None:
                path = self.path.split('?', 1)[0]
                owner.requests.append((self.command, path))
                data = owner.objects.get(path)
                if data is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header('Content-Type', 'application/octet-stream')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - http.server's API
                self._answer(True)

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's API
                self._answer(False)

            def log_message(self, *args: ty.Any) -> None:
                pass

        return Handler

    @property
    def port(self) -> int:
        """The listening port (after :meth:`start`)."""
        assert self._server is not None, 'not started'
        return int(self._server.server_address[1])

    def url(self, path: str) -> str:
        """``http://127.0.0.1:PORT`` + ``path``."""
        return 'http://127.0.0.1:%d%s' % (self.port, path)

    def start(self) -> ObjectServer:
        if self._server is None:
            self._server = http.server.ThreadingHTTPServer(
                ('127.0.0.1', self._port), self._handler())
            self._server.daemon_threads = True
            self._thread = threading.Thread(
                target=self._server.serve_forever, name='object-server',
                daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def __enter__(self) -> ObjectServer:
        return self.start()

    def __exit__(self, *exc: ty.Any) -> None:
        self.stop()


CONFIG_TEMPLATE = """\
[snapshot_ext]
driver = {driver}

[snapshot_ext_glance]
auth_type = admin_token
endpoint = {endpoint}
token = {token}
endpoint_override = {endpoint}
"""


def write_config(path: str, endpoint: str, token: str, driver: str,
                 location_url: str | None = None,
                 location_format: str = LOCATION_FORMAT) -> None:
    """Write a nova-snapshot-ext config file for an embedded Glance.

    :param location_url: when set, activate through this location
        (``location-first``, disk_format ``location_format``).
    """
    text = CONFIG_TEMPLATE.format(endpoint=endpoint, token=token,
                                  driver=driver)
    if location_url:
        head, sep, tail = text.partition('\n\n')
        text = head + LOCATION_CONFIG.format(
            url=location_url, disk_format=location_format) + sep + tail
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)


def location_format_for(driver_name: str) -> str:
    """The disk format of the demo's location object for this driver.

    :raises DriverNotFound: unknown driver.
    :raises ConfigurationError: the driver reads no format the plugin can
        serve honestly as a non-empty location object.
    """
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[], default_config_dirs=[])
    readable = driver_mod.load_driver(conf, driver_name).disk_formats
    usable = [f for f in readable if f in locations.INSPECTABLE_FORMATS and
              payloads.payload_size(f) > 0]
    if LOCATION_FORMAT in usable:
        return LOCATION_FORMAT
    if not usable:
        raise exception.ConfigurationError(
            group='demo', option='--driver', reason='driver %r reads no '
            'format a location object can honestly hold' % driver_name)
    return usable[0]
