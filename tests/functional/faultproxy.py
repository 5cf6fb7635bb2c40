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

"""A fault-injecting HTTP/1.1 proxy on 127.0.0.1, for functional tests.

:class:`FaultProxy` listens on a free port of 127.0.0.1 and forwards every
HTTP/1.1 request (keep-alive, ``Content-Length`` and chunked bodies in both
directions) to one upstream server, normally the embedded real Glance.
Rules (:class:`Rule`), matched by method, path regex and occurrence, replace
the plain forwarding with a fault:

============== ==========================================================
action         what the client sees / what the upstream sees
============== ==========================================================
reset_before   the connection is reset (RST); the upstream sees nothing
reset_after    the upstream answers; the client's connection is reset
status         the client gets ``status`` (502/503/500 ...); with
               ``forward=True`` the upstream handled the request first
delay          the request is forwarded ``seconds`` late (``when=
               'before'``, the upstream acts late) or the answer is
               returned ``seconds`` late (``when='after'``); either way
               the upstream gets the request, even if the client gave up
truncate       the upstream answers; the client gets the headers and only
               the first half of the body, then the connection closes
restart        the request is held while ``restart`` (a callable, e.g.
               :meth:`EmbeddedGlance.restart`) runs, then forwarded
hook           ``hook`` (a callable) runs, then the request is forwarded
               (e.g. to change the world just before Glance acts)
replace        the upstream answers; the client gets its status and
               headers with another body: ``body`` (bytes, or a callable
               returning bytes, e.g. another image's JSON)
trickle        the upstream answers; the client gets the answer one byte
               every ``seconds`` (head included), as long as it listens
answer         the client gets ``status`` (e.g. 204) with an empty body
               (or ``body``); the upstream sees nothing (an intermediary
               that answers without forwarding)
============== ==========================================================

``once`` rules fire one time and then stay inert; ``always`` rules fire
on every match.  :meth:`FaultProxy.random_faults` adds a seeded random
mode: each request gets one of the listed faults with a probability.
Every request is recorded in :attr:`FaultProxy.seen` (method, path, the
status the client got or None when it got none, the fault applied).

Example::

    proxy = self.useFixture(FaultProxyFixture(glance.endpoint)).proxy
    proxy.add_rule('GET', r'^/v2/images/[^/]+$', 'status', status=503)
    client = GlanceClient(session, endpoint_override=proxy.endpoint)
    ...
    self.assertEqual(1, proxy.count('GET', r'^/v2/images/'))
"""

import collections
import random
import re
import selectors
import socket
import struct
import threading
import typing as ty

import fixtures

ACTIONS = ('reset_before', 'reset_after', 'status', 'delay', 'truncate',
           'restart', 'hook', 'replace', 'trickle', 'answer')
#: Faults the random mode picks from by default.
RANDOM_ACTIONS = ('reset_before', 'reset_after', 'status', 'truncate')
_MAX_HEADER = 65536
_BODY_LESS_STATUS = (204, 304)


class ProxyError(Exception):
    """A malformed message or a closed peer while proxying."""


Seen = collections.namedtuple(
    'Seen', ['method', 'path', 'status', 'fault', 'upstream_status'])
Seen.__doc__ = """One request that reached the proxy.

:param method: the HTTP method.
:param path: the request target without the query string.
:param status: the status sent to the client, None if it got none
    (reset before or after forwarding, upstream gone).
:param fault: the action applied, or None for plain forwarding.
:param upstream_status: the upstream's status, None if not forwarded or
    it did not answer.
"""


class Rule(object):
    """A fault applied to matching requests.

    :param method: HTTP method to match (case-insensitive) or ``'*'``.
    :param path: regex searched in the request path (no query string).
    :param action: one of :data:`ACTIONS`.
    :param times: ``'once'`` or ``'always'``.
    :param nth: fire first on the nth matching request (1-based) only;
        None means from the first one.
    :param status: status code for ``action='status'`` (default 503).
    :param forward: for ``status``: forward first, then lie.
    :param seconds: for ``delay``: how long.
    :param when: for ``delay``: ``'before'`` (the upstream acts late) or
        ``'after'`` (the answer comes late).
    :param restart: for ``restart``: callable run while the request is
        held; the proxy's own ``restart`` callable if None.
    :param hook: for ``hook``: callable run before forwarding.
    :param body: for ``replace`` and ``answer``: the body the client gets
        (bytes, or a callable returning bytes, called when the rule fires).
    """

    def __init__(self, method, path, action, times='once', nth=None,
                 status=503, forward=False, seconds=6.0, when='before',
                 restart=None, hook=None, body=None):
        if action not in ACTIONS:
            raise ValueError('action must be one of %s, not %r' %
                             (', '.join(ACTIONS), action))
        if times not in ('once', 'always'):
            raise ValueError("times must be 'once' or 'always', not %r" %
                             times)
        if when not in ('before', 'after'):
            raise ValueError("when must be 'before' or 'after', not %r" %
                             when)
        self.method = method.upper()
        self.path = path
        self._path_re = re.compile(path)
        self.action = action
        self.times = times
        self.nth = nth
        self.status = int(status)
        self.forward = bool(forward)
        self.seconds = float(seconds)
        self.when = when
        self.restart = restart
        if action == 'hook' and not callable(hook):
            raise ValueError('a hook rule needs a callable hook')
        self.hook = hook
        if action == 'replace' and body is None:
            raise ValueError('a replace rule needs a body')
        self.body = body
        #: matching requests seen so far
        self.matches = 0
        #: times this rule fired
        self.fired = 0

    def __repr__(self):
        return ('Rule(%s %s %s %s nth=%s fired=%d)' %
                (self.method, self.path, self.action, self.times, self.nth,
                 self.fired))

    def matches_request(self, method, path):
        """Whether a request matches method and path (no counting).

        :param method: the request method.
        :param path: the request path.
        :returns: a bool.
        """
        return ((self.method == '*' or self.method == method.upper())
                and self._path_re.search(path) is not None)

    def take(self, method, path):
        """Count a request and say whether the rule fires for it.

        :param method: the request method.
        :param path: the request path.
        :returns: True when the fault applies to this request.
        """
        if not self.matches_request(method, path):
            return False
        self.matches += 1
        if self.nth is not None and self.matches < self.nth:
            return False
        if self.times == 'once' and self.fired:
            return False
        self.fired += 1
        return True


class _Message(object):
    """A parsed HTTP message head plus its raw body bytes."""

    def __init__(self, start_line, headers, body, chunked):
        self.start_line = start_line
        self.headers = headers  # list of (name, value) in order
        self.body = body  # raw bytes as on the wire (chunk framing kept)
        self.chunked = chunked

    def header(self, name):
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def head_bytes(self, headers=None):
        lines = [self.start_line]
        for key, value in (headers if headers is not None else
                           self.headers):
            lines.append('%s: %s' % (key, value))
        return ('\r\n'.join(lines) + '\r\n\r\n').encode('latin-1')

    def wants_close(self):
        value = (self.header('Connection') or '').lower()
        return 'close' in value or self.start_line.endswith('HTTP/1.0')


class _Reader(object):
    """Buffered reads of HTTP messages from a socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b''

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError()
        self.buf += data

    def read_line(self):
        while b'\r\n' not in self.buf:
            if len(self.buf) > _MAX_HEADER:
                raise ProxyError('header line too long')
            self._fill()
        line, self.buf = self.buf.split(b'\r\n', 1)
        return line

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_to_eof(self):
        chunks = [self.buf]
        self.buf = b''
        while True:
            data = self.sock.recv(65536)
            if not data:
                return b''.join(chunks)
            chunks.append(data)

    def read_head(self):
        start = self.read_line()
        while not start:  # tolerate stray CRLF between messages
            start = self.read_line()
        headers = []
        while True:
            line = self.read_line()
            if not line:
                break
            key, _, value = line.decode('latin-1').partition(':')
            headers.append((key.strip(), value.strip()))
        return start.decode('latin-1'), headers

    def read_chunked(self):
        parts = []
        while True:
            size_line = self.read_line()
            parts.append(size_line + b'\r\n')
            size = int(size_line.split(b';', 1)[0].strip() or b'0', 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    trailer = self.read_line()
                    parts.append(trailer + b'\r\n')
                    if not trailer:
                        return b''.join(parts)
            parts.append(self.read_exact(size + 2))

    def read_message(self, is_response=False, request_method=None):
        start, headers = self.read_head()
        msg = _Message(start, headers, b'', False)
        te = (msg.header('Transfer-Encoding') or '').lower()
        length = msg.header('Content-Length')
        if is_response:
            status = int(start.split(' ', 2)[1])
            if (request_method == 'HEAD' or status in _BODY_LESS_STATUS
                    or 100 <= status < 200):
                return msg
        if 'chunked' in te:
            msg.chunked = True
            msg.body = self.read_chunked()
        elif length is not None:
            msg.body = self.read_exact(int(length))
        elif is_response:
            msg.body = self.read_to_eof()
        return msg


def _status_of(msg):
    return int(msg.start_line.split(' ', 2)[1])


def _reset(sock):
    """Close a socket with an RST instead of a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack('ii', 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def _close(sock):
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class _Reset(Exception):
    """Internal: the client connection was reset on purpose."""


class FaultProxy(object):
    """A threaded HTTP/1.1 proxy that injects faults by rule.

    :param upstream: ``http://host:port`` of the server to forward to.
    :param restart: callable for ``restart`` rules (e.g. the embedded
        Glance's :meth:`restart`); may be set later.
    :param port: the port to listen on (default 0: any free one; the
        cloud in a box needs one below the ephemeral range).
    """

    def __init__(self, upstream, restart=None, port=0):
        match = re.match(r'^http://([^/:]+):(\d+)/?$', upstream)
        if not match:
            raise ValueError('upstream must be http://host:port, not %r' %
                             upstream)
        self.upstream = (match.group(1), int(match.group(2)))
        self.restart = restart
        self.rules: list[Rule] = []
        self.seen: list[Seen] = []
        #: (method, path) of every request as it arrives, before any fault
        self.arrivals: list[tuple[str, str]] = []
        self._random: ty.Optional[tuple] = None
        self._lock = threading.Lock()
        self._listener = None
        self._threads: list[threading.Thread] = []
        self._socks: set = set()
        self._stopping = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._inflight = 0
        self._bind_port = port
        self.port = None

    # ------------------------------------------------------------------
    # API for tests

    @property
    def endpoint(self):
        """``http://127.0.0.1:PORT`` of the proxy."""
        return 'http://127.0.0.1:%d' % self.port

    def add_rule(self, method, path, action, **kwargs):
        """Add a :class:`Rule` (same arguments) and return it.

        Rules are tried in the order added; the first that fires wins.

        :returns: the :class:`Rule`.
        """
        rule = Rule(method, path, action, **kwargs)
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self):
        """Remove all rules, the random mode and the record.

        :returns: None
        """
        with self._lock:
            self.rules = []
            self.seen = []
            self.arrivals = []
            self._random = None

    def random_faults(self, seed, probability, actions=RANDOM_ACTIONS,
                      method='*', path='', status=503, seconds=6.0):
        """Fault a random share of the matching requests.

        Applied when no rule fires.  ``delay`` uses ``seconds`` and
        ``when='before'``; ``status`` answers ``status`` without
        forwarding.

        :param seed: seed of the private random generator.
        :param probability: chance (0..1) that one request is faulted.
        :param actions: the faults to choose from (uniformly).
        :param method: method filter (``'*'`` for all).
        :param path: path regex filter.
        :returns: None
        """
        for action in actions:
            if action not in ACTIONS or action in ('restart', 'hook',
                                                   'replace'):
                raise ValueError('random mode cannot apply %r' % action)
        with self._lock:
            self._random = (random.Random(seed), float(probability),
                            tuple(actions),
                            Rule(method, path, 'status', times='always',
                                 status=status, seconds=seconds))

    def count(self, method='*', path='', status=None, fault=None):
        """Count recorded requests.

        :param method: method or ``'*'``.
        :param path: regex searched in the path.
        :param status: only requests the client got this status for.
        :param fault: only requests with this fault (``'any'``: any fault).
        :returns: an int.
        """
        rule = Rule(method, path, 'status')
        n = 0
        with self._lock:
            seen = list(self.seen)
        for item in seen:
            if not rule.matches_request(item.method, item.path):
                continue
            if status is not None and item.status != status:
                continue
            if fault == 'any' and item.fault is None:
                continue
            if fault not in (None, 'any') and item.fault != fault:
                continue
            n += 1
        return n

    def wait_idle(self, timeout=60.0):
        """Wait until no request is inside the proxy (late ones included).

        A ``delay`` or ``restart`` fault keeps forwarding after the client
        gave up; call this before judging what Glance holds.

        :param timeout: seconds to wait at most.
        :returns: True when idle, False on timeout.
        """
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout)

    def wait_arrival(self, method='*', path='', n=1, timeout=60.0):
        """Wait until ``n`` matching requests have arrived at the proxy.

        Counts requests when they arrive, before a fault or the upstream
        handles them (e.g. to interrupt a client while its request is
        held by a ``delay`` rule).

        :returns: True when they arrived, False on timeout.
        """
        rule = Rule(method, path, 'status')

        def arrived():
            return sum(1 for m, p in self.arrivals
                       if rule.matches_request(m, p)) >= n
        with self._idle:
            return self._idle.wait_for(arrived, timeout)

    def faults(self):
        """Return the recorded requests that were faulted.

        :returns: a list of :class:`Seen`.
        """
        with self._lock:
            return [s for s in self.seen if s.fault is not None]

    # ------------------------------------------------------------------
    # lifecycle

    def start(self):
        """Listen on 127.0.0.1 (a free port unless given) in a thread.

        :returns: self
        """
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(('127.0.0.1', self._bind_port))
        sock.listen(128)
        self._listener = sock
        self.port = sock.getsockname()[1]
        sel = selectors.DefaultSelector()
        sel.register(sock, selectors.EVENT_READ)
        thread = threading.Thread(target=self._accept_loop, args=(sel,),
                                  name='faultproxy-%d' % self.port,
                                  daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self):
        """Stop accepting, close every connection, join the threads.

        :returns: None
        """
        self._stopping.set()
        _close(self._listener)
        with self._lock:
            socks = list(self._socks)
        for sock in socks:
            _close(sock)
        for thread in list(self._threads):
            if thread is not threading.current_thread():
                thread.join(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # ------------------------------------------------------------------
    # serving

    def _track(self, sock):
        with self._lock:
            self._socks.add(sock)

    def _untrack(self, sock):
        with self._lock:
            self._socks.discard(sock)

    def _accept_loop(self, sel):
        try:
            while not self._stopping.is_set():
                try:
                    if not sel.select(0.2):
                        continue
                except (OSError, ValueError):
                    return  # the listener was closed by stop()
                try:
                    client, _ = self._listener.accept()
                except OSError:
                    if self._stopping.is_set():
                        return
                    continue
                self._track(client)
                thread = threading.Thread(target=self._serve,
                                          args=(client,), daemon=True)
                with self._lock:
                    self._threads = [t for t in self._threads
                                     if t.is_alive()]
                    self._threads.append(thread)
                thread.start()
        finally:
            sel.close()

    def _choose(self, method, path):
        with self._lock:
            for rule in self.rules:
                if rule.take(method, path):
                    return rule
            if self._random is not None:
                rng, probability, actions, flt = self._random
                if flt.matches_request(method, path):
                    if rng.random() < probability:
                        action = rng.choice(actions)
                        return Rule(method, '', action, status=flt.status,
                                    seconds=flt.seconds)
        return None

    def _record(self, method, path, status, fault, upstream_status):
        with self._lock:
            self.seen.append(Seen(method, path, status, fault,
                                  upstream_status))

    def _serve(self, client):
        upstream = {'sock': None, 'reader': None}
        reader = _Reader(client)
        try:
            while not self._stopping.is_set():
                try:
                    request = reader.read_message()
                except (EOFError, OSError, ProxyError, ValueError):
                    return
                parts = request.start_line.split(' ')
                with self._idle:
                    self._inflight += 1
                    self.arrivals.append((parts[0], parts[1].split('?', 1)[0]
                                          if len(parts) > 1 else ''))
                    self._idle.notify_all()
                try:
                    keep = self._handle(client, request, upstream)
                except _Reset:
                    return
                finally:
                    with self._idle:
                        self._inflight -= 1
                        self._idle.notify_all()
                if not keep:
                    return
        finally:
            _close(upstream['sock'])
            self._untrack(client)
            _close(client)

    def _connect(self, upstream):
        _close(upstream['sock'])
        sock = socket.create_connection(self.upstream, timeout=300)
        self._track(sock)
        upstream['sock'] = sock
        upstream['reader'] = _Reader(sock)

    def _forward(self, request, upstream):
        """Send a request upstream and return its response (or raise)."""
        method = request.start_line.split(' ', 1)[0]
        data = request.head_bytes() + request.body
        for attempt in (1, 2):
            fresh = upstream['sock'] is None
            if fresh:
                self._connect(upstream)
            try:
                upstream['sock'].sendall(data)
                response = upstream['reader'].read_message(
                    is_response=True, request_method=method)
            except (EOFError, OSError):
                # A kept-alive upstream connection closed under us: one
                # new connection, as any HTTP client would.
                _close(upstream['sock'])
                upstream['sock'] = None
                if fresh or attempt == 2:
                    raise
                continue
            if response.wants_close():
                _close(upstream['sock'])
                upstream['sock'] = None
            return response
        raise AssertionError('unreachable')

    def _send(self, client, data):
        try:
            client.sendall(data)
            return True
        except OSError:
            return False

    def _handle(self, client, request, upstream):
        """Apply the rule (if any) to one request; return keep-alive."""
        parts = request.start_line.split(' ')
        method = parts[0]
        path = parts[1].split('?', 1)[0] if len(parts) > 1 else ''
        rule = self._choose(method, path)
        action = rule.action if rule else None

        if action == 'reset_before':
            self._record(method, path, None, action, None)
            _reset(client)
            raise _Reset()
        if action == 'status' and not rule.forward:
            self._record(method, path, rule.status, action, None)
            return self._send_status(client, rule.status, request)
        if action == 'answer':
            self._record(method, path, rule.status, action, None)
            return self._send_answer(client, rule.status, rule, request)
        if action == 'delay' and rule.when == 'before':
            self._stopping.wait(rule.seconds)
        if action == 'hook':
            rule.hook()
        if action == 'restart':
            restart = rule.restart or self.restart
            if restart is None:
                raise AssertionError('restart rule without a restart '
                                     'callable')
            _close(upstream['sock'])
            upstream['sock'] = None
            restart()

        try:
            response = self._forward(request, upstream)
        except (EOFError, OSError, ProxyError, ValueError):
            # The upstream is gone: the client sees a reset, as it would
            # without the proxy.
            self._record(method, path, None, action, None)
            _reset(client)
            raise _Reset()
        upstream_status = _status_of(response)

        if action == 'reset_after':
            self._record(method, path, None, action, upstream_status)
            _reset(client)
            raise _Reset()
        if action == 'status':
            self._record(method, path, rule.status, action, upstream_status)
            return self._send_status(client, rule.status, request)
        if action == 'delay' and rule.when == 'after':
            self._stopping.wait(rule.seconds)
        if action == 'truncate':
            self._record(method, path, upstream_status, action,
                         upstream_status)
            self._send_truncated(client, response)
            raise _Reset()
        if action == 'replace':
            self._record(method, path, upstream_status, action,
                         upstream_status)
            return self._send_replaced(client, response, rule, request)
        if action == 'trickle':
            self._record(method, path, upstream_status, action,
                         upstream_status)
            data = response.head_bytes() + response.body
            for i in range(len(data)):
                if self._stopping.is_set() or not self._send(
                        client, data[i:i + 1]):
                    raise _Reset()
                self._stopping.wait(rule.seconds)
            return not response.wants_close() and \
                not request.wants_close()

        # Recorded before the answer leaves, so a client that got it can
        # count it.
        self._record(method, path, upstream_status, action, upstream_status)
        ok = self._send(client, response.head_bytes() + response.body)
        return ok and not response.wants_close() and \
            not request.wants_close()

    def _send_status(self, client, status, request):
        reason = {500: 'Internal Server Error', 502: 'Bad Gateway',
                  503: 'Service Unavailable',
                  504: 'Gateway Timeout'}.get(status, 'Fault')
        # What a load balancer in front of Glance sends (HTML, not JSON).
        body = ('<html><body><h1>%d %s</h1>\nfault proxy\n</body></html>\n'
                % (status, reason)).encode('ascii')
        head = ('HTTP/1.1 %d %s\r\nContent-Type: text/html\r\n'
                'Content-Length: %d\r\n\r\n' % (status, reason, len(body)))
        return (self._send(client, head.encode('latin-1') + body)
                and not request.wants_close())

    @staticmethod
    def _rule_body(rule):
        body = rule.body() if callable(rule.body) else rule.body
        return body or b''

    def _send_answer(self, client, status, rule, request):
        body = self._rule_body(rule)
        reason = {200: 'OK', 201: 'Created', 202: 'Accepted',
                  204: 'No Content'}.get(status, 'Fault')
        head = 'HTTP/1.1 %d %s\r\n' % (status, reason)
        if status not in _BODY_LESS_STATUS:
            head += ('Content-Type: application/json\r\n'
                     'Content-Length: %d\r\n' % len(body))
        else:
            body = b''
        return (self._send(client, (head + '\r\n').encode('latin-1') +
                           body) and not request.wants_close())

    def _send_replaced(self, client, response, rule, request):
        body = self._rule_body(rule)
        headers = [(k, v) for k, v in response.headers
                   if k.lower() not in ('content-length',
                                        'transfer-encoding')]
        headers.append(('Content-Length', str(len(body))))
        ok = self._send(client, response.head_bytes(headers) + body)
        return ok and not response.wants_close() and \
            not request.wants_close()

    def _send_truncated(self, client, response):
        body = response.body
        if response.chunked:
            # Decode enough to cut inside the payload of the first chunk.
            cut = max(1, len(body) // 2)
        else:
            cut = len(body) // 2
        if not body:
            # Nothing to cut: drop the connection after the status line.
            self._send(client, response.start_line.encode('latin-1') +
                       b'\r\n')
        else:
            self._send(client, response.head_bytes() + body[:cut])
        _close(client)


class FaultProxyFixture(fixtures.Fixture):
    """A started :class:`FaultProxy` in front of ``upstream``.

    :param upstream: ``http://host:port`` to forward to (e.g.
        ``glance.endpoint``).
    :param restart: callable for ``restart`` rules.
    """

    def __init__(self, upstream, restart=None):
        super().__init__()
        self.upstream = upstream
        self.restart = restart
        self.proxy = None

    def _setUp(self):
        self.proxy = FaultProxy(self.upstream, restart=self.restart).start()
        self.addCleanup(self.proxy.stop)

    @property
    def endpoint(self):
        """The proxy's ``http://127.0.0.1:PORT``."""
        return self.proxy.endpoint
