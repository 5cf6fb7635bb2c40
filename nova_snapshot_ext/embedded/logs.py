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

"""The log of a service the embedded launchers started, as errors quote it."""

import collections

#: Lines of a service's log an error quotes by default.
TAIL_LINES = 40


def tail(path, lines=TAIL_LINES):
    """Return the last lines of a text file.

    :param path: the file to read.
    :param lines: how many lines to return.
    :returns: the tail as one string, undecodable bytes replaced ('' if
        the file cannot be read).
    """
    try:
        with open(path, 'rb') as fh:
            data = collections.deque(fh, maxlen=lines)
    except OSError:
        return ''
    return b''.join(data).decode('utf-8', 'replace')
