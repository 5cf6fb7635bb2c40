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

"""Properties that make Glance act on another resource at image deletion.

Glance's image delete (``glance/api/v2/images.py``
``ImagesController.delete``) does three things besides removing the
image's row:

* it deletes the image's data from the stores its locations name
  (``glance/location.py`` ``ImageProxy.delete``): not a property; the
  plugin's payloads are its own, and a location it adds is on a read-only
  store (design rule 7);
* it cancels the import task an ``os_glance_import_task`` /
  ``os_glance_hash_op_host`` pair names: Glance's reserved namespace,
  which the plugin never writes (preflight refuses it);
* it deletes the key-manager secret ``cinder_encryption_key_id`` names
  when ``cinder_encryption_key_deletion_policy`` is ``on_image_deletion``
  (``ImagesController._delete_encryption_key``).  That secret may be the
  key of a live encrypted volume: deleting a snapshot image would make
  the volume unreadable.

So the one property of a record that arms Glance against another resource
is :data:`ARMING` with the value that arms it (compared exactly, as Glance
compares it: another spelling makes Glance do nothing).  A request whose user
metadata carries it is refused (exit 2, the property named): dropping it
would silently lose what the caller asked for, and a "safe" value in its
place would be a choice the caller did not make.  The plugin never
inherits it (kind ``secret``), never writes it, and never deletes an image
that carries it (failed-attempt cleanup, backup rotation, ``audit
--fix``); ``audit`` reports such images (``deletion-hazard``).
"""

from __future__ import annotations

import typing as ty

#: Property name -> the value with which Glance deletes another resource
#: when the image is deleted, and what it deletes.
ARMING: dict[str, tuple[str, str]] = {
    'cinder_encryption_key_deletion_policy': (
        'on_image_deletion',
        'Glance deletes the key-manager secret cinder_encryption_key_id '
        'names when the image is deleted (it may be the key of a live '
        'encrypted volume)'),
}


def hazard(properties: ty.Mapping[str, ty.Any]) -> tuple[str, str] | None:
    """The property that makes deleting an image destroy something else.

    :param properties: an image's properties (a Glance image dict, or a
        record's properties, or user metadata).
    :returns: ``(name, reason)`` or ``None``.
    """
    for name, (value, what) in ARMING.items():
        if properties.get(name) == value:
            return name, '%s = %s: %s' % (name, value, what)
    return None


def refusal_to_delete(image: ty.Mapping[str, ty.Any]) -> str | None:
    """Why the plugin must not delete ``image`` (``None``: it may).

    :param image: the image as last read from Glance.
    :returns: one sentence for the operator, or ``None``.
    """
    found = hazard(image)
    if found is None:
        return None
    return ('not deleted: %s; delete it by hand once that secret is known '
            'to be unused, or remove the property first' % found[1])
