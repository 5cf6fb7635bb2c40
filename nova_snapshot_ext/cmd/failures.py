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

"""A Glance error or a failed activation met mid-command, in words.

Each function returns the message and the exit status (by the cause:
Glance unreachable or a refused credential is exit 3, bad input 2,
everything else 1; doc/source/cli.rst "Exit status by cause").
"""

from __future__ import annotations

from nova_snapshot_ext.cmd import connection
from nova_snapshot_ext.cmd import errors
from nova_snapshot_ext import exception
from nova_snapshot_ext import opts


def glance_error(err: exception.GlanceError) -> tuple[str, int]:
    """The message and exit status of a Glance error met mid-command.

    Adds the Glance URL when the message lacks it; a 401 is a missing or
    refused credential (exit 3) and names ``auth_type``.
    """
    message = err.format_message()
    status = err.status
    where = connection.CONNECTED.get('endpoint')
    if where and where not in message:
        message = 'Glance at %s: %s' % (where, message)
    if exception.unreachable(err):
        return message, errors.EXIT_UNREACHABLE
    if isinstance(err, exception.GlanceUnavailable):
        # A deadline on a Glance that was reached: Glance failed (1).
        return message, errors.EXIT_FAILED
    if status == 401:
        return '%s (%s)' % (message, _auth_hint()), errors.EXIT_UNREACHABLE
    return message, errors.EXIT_FAILED


def _auth_hint() -> str:
    """Why Glance answered 401, as far as the CLI knows.

    A token Keystone issued in this run and Glance then refused has
    expired or was revoked (:func:`token_refused_hint`); otherwise the
    credentials were refused, or none were sent.
    """
    return connection.token_refused_hint() or (
        'the credentials of [%s] were refused' % opts.GLANCE_GROUP
        if connection.CONNECTED.get('authenticated') else
        'no credentials were sent: set [%s] auth_type and its '
        'options' % opts.GLANCE_GROUP)


def activation_failure(err: exception.ActivationFailed) -> tuple[str, int]:
    """The message and exit status of a snapshot that was not activated.

    By the cause of its last attempt's failure, as for any Glance error
    (:func:`glance_error`; doc/source/cli.rst "Exit status by cause"):
    Glance unreachable or a 401 on the requests after the create is exit
    3 (the 401 explained: an expired or revoked token when Keystone issued
    one in this run), everything else exit 1.

    :returns: ``(message, exit status)``.
    """
    message = err.format_message()
    cause = err.__cause__
    if not isinstance(cause, exception.GlanceError):
        return message, errors.EXIT_FAILED
    if isinstance(cause, exception.SnapshotImageConflict):
        # The request names an image that is not this record's (its
        # image_id, or volume snapshot ids another record already holds):
        # bad input, met the same way on every retry of this request.
        return message, errors.EXIT_INPUT
    if cause.status == 401:
        return ('%s (Glance refused the request with HTTP 401: %s)'
                % (message, _auth_hint()), errors.EXIT_UNREACHABLE)
    return message, glance_error(cause)[1]
