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

"""A minimal network endpoint, registered as ``network`` (no Neutron).

nova-api asks the network service for security groups whenever it shows
a server; without a ``network`` endpoint every ``GET /servers/{id}``
answers 500.  This answers the versions document, an empty list for every
``/v2.0/<resource>``, unlimited quotas, 404 for one resource and 204 for
every DELETE.  Servers are booted with ``"networks": "none"``.  It is the
one stand-in besides the storage drivers (doc/source/cloud.rst).

Run: ``python network.py PORT`` (standard library only).
"""

import http.server
import json
import sys
import urllib.parse

_QUOTA = {'network': -1, 'subnet': -1, 'port': -1, 'router': -1,
          'floatingip': -1, 'security_group': -1,
          'security_group_rule': -1}


def answer(method, path):
    """The status and JSON body for one request.

    :param method: the HTTP method.
    :param path: the request path (with query).
    :returns: ``(status, body or None)``.
    """
    parts = [p for p in urllib.parse.urlsplit(path).path.split('/') if p]
    if parts and parts[-1].endswith('.json'):
        parts[-1] = parts[-1][:-len('.json')]
    if method == 'DELETE':
        return 204, None
    if not parts:
        return 200, {'versions': [{'id': 'v2.0', 'status': 'CURRENT',
                                   'links': [{'rel': 'self',
                                              'href': '/v2.0/'}]}]}
    if parts[0] != 'v2.0':
        return 404, {'NeutronError': {'message': 'not found'}}
    if len(parts) == 1:
        return 200, {'resources': []}
    resource = parts[1].replace('-', '_')
    if method != 'GET':
        return 400, {'NeutronError': {
            'type': 'BadRequest',
            'message': 'this minimal network endpoint creates nothing'}}
    if resource == 'quotas' and len(parts) >= 3:
        return 200, {'quota': dict(_QUOTA)}
    if resource == 'extensions' and len(parts) == 2:
        return 200, {'extensions': []}
    if len(parts) == 2:
        return 200, {resource: []}
    return 404, {'NeutronError': {'type': 'NotFound',
                                  'message': '%s not found' % parts[2]}}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def _reply(self):
        length = int(self.headers.get('Content-Length') or 0)
        if length:
            self.rfile.read(length)
        status, body = answer(self.command, self.path)
        data = json.dumps(body).encode() if body is not None else b''
        self.send_response(status)
        if body is not None:
            self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _reply

    def log_message(self, fmt, *args):
        sys.stderr.write('%s %s\n' % (self.log_date_time_string(),
                                      fmt % args))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    server = http.server.ThreadingHTTPServer(('127.0.0.1', int(argv[0])),
                                             _Handler)
    server.serve_forever()


if __name__ == '__main__':
    main()
