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

"""One benchmark path in its own process: ``python -m bench.worker``.

Protocol (one JSON object per line): the first line on stdin is the worker
spec (:mod:`bench.paths`); the worker sets the path up and answers
``{"ready": true, ...}``.  Then each ``{"op": "batch", "count": k,
"concurrency": c}`` runs ``k`` snapshots on ``c`` threads and answers the
measurements; ``{"op": "quit"}`` answers the final resource usage and
exits.  Answers go to the original stdout; anything the libraries print
goes to stderr.

Measured per batch: wall-clock seconds of each snapshot
(``time.perf_counter`` around the path's call), the process CPU seconds
of the whole batch (``time.process_time`` delta around the calls, all
threads: user + system), the batch's wall-clock seconds, errors (never
raised: counted, with their type and first message).
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import resource
import sys
import time
import typing as ty

from bench import paths


def _rss_kib() -> int:
    """Current resident set size of this process, KiB (Linux)."""
    with open('/proc/self/status', encoding='ascii') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def _maxrss_kib() -> int:
    """Peak resident set size of this process so far, KiB (Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


class Worker:
    """Runs batches of one path.

    :param path: the set-up :class:`~bench.paths.BenchPath`.
    :param concurrency: the largest number of threads a batch may use.
    """

    def __init__(self, path: paths.BenchPath, concurrency: int):
        self.path = path
        self.seq = 0
        self.limit = concurrency
        #: One thread pool per concurrency a batch asked for, kept.
        self.executors: dict[
            int, concurrent.futures.ThreadPoolExecutor] = {}

    def _executor(self, threads: int
                  ) -> concurrent.futures.ThreadPoolExecutor:
        if threads not in self.executors:
            self.executors[threads] = concurrent.futures.ThreadPoolExecutor(
                max_workers=threads, thread_name_prefix='bench')
        return self.executors[threads]

    def _one(self, prepared: ty.Any) -> tuple[float, str | None]:
        start = time.perf_counter()
        try:
            self.path.snapshot(prepared)
            error = None
        except Exception as err:  # noqa: B902 - counted, never hidden
            error = '%s: %s' % (type(err).__name__,
                                ' '.join(str(err).split())[:300])
        return time.perf_counter() - start, error

    def batch(self, count: int, concurrency: int) -> dict[str, ty.Any]:
        """Run ``count`` snapshots on ``concurrency`` threads.

        :returns: ``latencies_s`` (one per snapshot, seconds), ``errors``
            (one per snapshot, ``None`` or ``"Type: message"``), ``cpu_s``
            and ``wall_s`` of the batch (seconds), ``maxrss_kib``.
        """
        inputs = [self.path.prepare(self.seq + i) for i in range(count)]
        self.seq += count
        cpu0 = time.process_time()
        wall0 = time.perf_counter()
        if concurrency > 1:
            results = list(self._executor(min(concurrency, self.limit)).map(
                self._one, inputs))
        else:
            results = [self._one(p) for p in inputs]
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        return {'latencies_s': [r[0] for r in results],
                'errors': [r[1] for r in results],
                'cpu_s': cpu, 'wall_s': wall,
                'maxrss_kib': _maxrss_kib()}

    def close(self) -> None:
        for executor in self.executors.values():
            executor.shutdown(wait=True)


def main() -> int:
    """Serve the protocol on stdin/stdout; returns the exit code."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), 'w', buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    def answer(obj: ty.Mapping[str, ty.Any]) -> None:
        answers.write(json.dumps(obj) + '\n')
        answers.flush()

    spec = json.loads(sys.stdin.readline())
    started = time.perf_counter()
    cpu0 = time.process_time()
    try:
        path = paths.PATHS[spec['path']](spec)
        path.setup()
    except Exception as err:  # noqa: B902 - reported to the orchestrator
        answer({'ready': False,
                'error': '%s: %s' % (type(err).__name__, err)})
        return 1
    worker = Worker(path, int(spec.get('concurrency', 1)))
    answer({'ready': True, 'pid': os.getpid(),
            'setup_s': time.perf_counter() - started,
            'setup_cpu_s': time.process_time() - cpu0,
            'rss_kib': _rss_kib(), 'maxrss_kib': _maxrss_kib()})
    for line in sys.stdin:
        command = json.loads(line)
        if command.get('op') == 'batch':
            answer(worker.batch(int(command['count']),
                                int(command['concurrency'])))
            continue
        break
    worker.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    answer({'rss_kib': _rss_kib(), 'maxrss_kib': int(usage.ru_maxrss),
            'cpu_s': usage.ru_utime + usage.ru_stime})
    return 0


if __name__ == '__main__':
    sys.exit(main())
