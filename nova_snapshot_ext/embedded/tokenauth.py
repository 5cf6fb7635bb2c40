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

"""A tiny, insecure token middleware for the embedded test glance-api.

It lets a client that only knows how to send ``X-Auth-Token`` (for
example Nova's glance client) talk to an embedded glance-api without a
Keystone.  The token itself carries the identity::

    user_id:project_id:role1,role2[:service_role1,service_role2]

The middleware strips every identity header a client may have sent, then
sets ``X-Identity-Status``, ``X-User-Id``, ``X-Project-Id``, ``X-Roles``
(and ``X-Service-Roles``) from the token, the way keystonemiddleware would
after validating a real token.  An ``X-Service-Token`` of the same form
contributes its roles to ``X-Service-Roles``.  Glance's
``ContextMiddleware`` then builds the request context from those headers.

A request without a token is passed on unauthenticated; a malformed token
is answered with 401.  Never use this outside tests.
"""

import urllib.parse

from oslo_log import log as logging

LOG = logging.getLogger(__name__)

# WSGI environ keys (or key prefixes) that carry identity and that a client
# must not be able to inject.
_STRIP_PREFIXES = (
    'HTTP_X_IDENTITY_STATUS',
    'HTTP_X_SERVICE_IDENTITY_STATUS',
    'HTTP_X_ROLE',
    'HTTP_X_USER',
    'HTTP_X_PROJECT',
    'HTTP_X_TENANT',
    'HTTP_X_DOMAIN',
    'HTTP_X_SERVICE_',
    'HTTP_X_IS_ADMIN_PROJECT',
    'HTTP_X_SYSTEM_SCOPE',
    'HTTP_X_TRUST',
)
_KEEP = frozenset(['HTTP_X_SERVICE_TOKEN'])


class InvalidToken(ValueError):
    """The token does not have the ``user:project:roles`` form."""


def parse_token(token):
    """Split a fake token into its identity parts.

    :param token: a string ``user_id:project_id:roles[:service_roles]``
        where roles are comma separated; it may be percent-encoded.
    :returns: a tuple ``(user_id, project_id, roles, service_roles)``
        with ``roles`` and ``service_roles`` as lists of strings.
    :raises InvalidToken: if the token does not have that form.
    """
    token = urllib.parse.unquote(token or '').strip()
    parts = token.split(':')
    if len(parts) not in (3, 4):
        raise InvalidToken('expected user:project:roles[:service_roles]')
    user_id, project_id = parts[0].strip(), parts[1].strip()
    if not user_id or not project_id:
        raise InvalidToken('user_id and project_id must not be empty')
    roles = _split_roles(parts[2])
    service_roles = _split_roles(parts[3]) if len(parts) == 4 else []
    return user_id, project_id, roles, service_roles


def make_token(user_id, project_id, roles, service_roles=()):
    """Build a fake token understood by :class:`TokenAuthMiddleware`.

    :param user_id: the user id.
    :param project_id: the project id.
    :param roles: an iterable of role names.
    :param service_roles: an optional iterable of service role names.
    :returns: the token string.
    """
    token = '%s:%s:%s' % (user_id, project_id, ','.join(roles))
    if service_roles:
        token += ':' + ','.join(service_roles)
    return token


def _split_roles(value):
    """Split a comma separated role list.

    :param value: the comma separated roles.
    :returns: a list of non-empty role names.
    """
    return [r.strip() for r in value.split(',') if r.strip()]


def _strip_identity(environ):
    """Remove every client supplied identity header from ``environ``.

    :param environ: the WSGI environ, modified in place.
    :returns: the list of removed keys.
    """
    removed = [key for key in environ
               if key.startswith(_STRIP_PREFIXES) and key not in _KEEP]
    for key in removed:
        del environ[key]
    return removed


class TokenAuthMiddleware(object):
    """WSGI middleware turning a fake ``X-Auth-Token`` into identity headers.

    :param app: the next WSGI application in the pipeline.
    :param conf: the paste local configuration (unused, kept for paste).
    """

    def __init__(self, app, conf=None):
        self.app = app
        self.conf = dict(conf or {})

    def __call__(self, environ, start_response):
        """Handle one request.

        :param environ: the WSGI environ.
        :param start_response: the WSGI start_response callable.
        :returns: the response body iterable.
        """
        removed = _strip_identity(environ)
        if removed:
            LOG.debug('Stripped client identity headers: %s', removed)
        token = environ.get('HTTP_X_AUTH_TOKEN')
        if not token:
            return self.app(environ, start_response)
        try:
            user_id, project_id, roles, service_roles = parse_token(token)
        except InvalidToken as exc:
            LOG.info('Rejecting malformed fake token: %s', exc)
            return self._unauthorized(start_response, str(exc))

        service_token = environ.get('HTTP_X_SERVICE_TOKEN')
        if service_token:
            try:
                service_roles = service_roles + parse_token(service_token)[2]
            except InvalidToken as exc:
                LOG.info('Rejecting malformed fake service token: %s', exc)
                return self._unauthorized(start_response, str(exc))

        environ['HTTP_X_IDENTITY_STATUS'] = 'Confirmed'
        environ['HTTP_X_USER_ID'] = user_id
        environ['HTTP_X_PROJECT_ID'] = project_id
        environ['HTTP_X_ROLES'] = ','.join(roles)
        if service_roles:
            environ['HTTP_X_SERVICE_IDENTITY_STATUS'] = 'Confirmed'
            environ['HTTP_X_SERVICE_ROLES'] = ','.join(service_roles)
        return self.app(environ, start_response)

    @staticmethod
    def _unauthorized(start_response, reason):
        """Answer 401 Unauthorized.

        :param start_response: the WSGI start_response callable.
        :param reason: a short explanation included in the body.
        :returns: the response body iterable.
        """
        body = ('401 Unauthorized: invalid fake token (%s)\n' %
                reason).encode('utf-8')
        start_response('401 Unauthorized',
                       [('Content-Type', 'text/plain; charset=UTF-8'),
                        ('Content-Length', str(len(body))),
                        ('WWW-Authenticate', 'Token')])
        return [body]


def filter_factory(global_conf, **local_conf):
    """Paste filter factory for :class:`TokenAuthMiddleware`.

    :param global_conf: the paste global configuration.
    :param local_conf: the filter's local configuration.
    :returns: a callable wrapping a WSGI app in the middleware.
    """
    conf = dict(global_conf)
    conf.update(local_conf)

    def _filter(app):
        return TokenAuthMiddleware(app, conf)

    return _filter
