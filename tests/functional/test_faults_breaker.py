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

"""Exactly once: fault positions the matrix of test_faults does not hold.

Each cell is judged by :meth:`test_faults.CellMixin.run_cell` (Glance's own
view, then a clean retry): the member call of a snapshot taken for another
project's server, the second attempt of the format chain and the cleanup
``DELETE`` of the first, the create and read-back in location mode, and
requests that carry their own ``image_id``.
"""

import uuid

import fixtures

from tests.functional import test_faults as tf

MEMBERS = r'^/v2/images/[^/]+/members$'
CREATE = r'^/v2/images$'
UPLOAD = r'^/v2/images/[^/]+/file$'
IMAGE = r'^/v2/images/[^/]+$'

EXTRA_KINDS = {
    'member': ('POST', MEMBERS, 'upload'),
    'create_loc': ('POST', CREATE, 'location'),
    'get_loc': ('GET', IMAGE, 'location'),
    'create2': ('POST', CREATE, 'location'),
    'delete_first': ('DELETE', IMAGE, 'upload'),
}

EXTRA_FAULTS = {
    '503_2nd': {'action': 'status', 'status': 503, 'nth': 2},
    'reset_after_2nd': {'action': 'reset_after', 'nth': 2},
    'delay_2nd': {'action': 'delay', 'seconds': tf.DELAY, 'nth': 2},
}


class BreakerCells(tf.FaultTestBase, tf.CellMixin):
    """New fault positions; library runs (the same judgement as the CLI)."""

    OTHER_PROJECT = False
    WITH_IMAGE_ID = False

    def setUp(self):
        super().setUp()
        kinds = dict(tf.KINDS, **EXTRA_KINDS)
        faults = dict(tf.FAULTS, **EXTRA_FAULTS)
        self.useFixture(fixtures.MonkeyPatch(
            'tests.functional.test_faults.KINDS', kinds))
        self.useFixture(fixtures.MonkeyPatch(
            'tests.functional.test_faults.FAULTS', faults))
        real = tf.fresh_request_dict
        other = self.new_project()

        def fresh(project_id, user_id):
            data = real(project_id, user_id)
            if self.OTHER_PROJECT:
                # An admin-like requester snapshots another project's
                # server: the image is shared with the server's project.
                data['server']['project_id'] = other
            if self.WITH_IMAGE_ID:
                data['image_id'] = str(uuid.uuid4())
            return data
        self.useFixture(fixtures.MonkeyPatch(
            'tests.functional.test_faults.fresh_request_dict', fresh))

    def cell(self, kind, fault, times='once', via='library', before=()):
        for method, path, action, kwargs in before:
            self.proxy.add_rule(method, path, action, **kwargs)
        self.run_cell(kind, fault, times, via=via, require_fired=True)


def _add(cls, kind, fault, times='once', via='library', before=()):
    def test(self):
        self.cell(kind, fault, times, via, before)
    test.__name__ = 'test_%s_%s_%s_%s' % (kind, fault, times, via)
    setattr(cls, test.__name__, test)


class TestMemberFaults(BreakerCells):
    """The member POST when the requester's project is not the server's."""

    OTHER_PROJECT = True


for _fault in ('503', 'reset_before', 'reset_after', '502_after', 'delay',
               'truncate'):
    _add(TestMemberFaults, 'member', _fault)
_add(TestMemberFaults, 'member', '503', 'always')
_add(TestMemberFaults, 'member', 'reset_after', via='cli')

# The first upload is refused as too large (413): the plan moves on to the
# next format; fault the second create or the first attempt's cleanup.
TOO_LARGE = (('PUT', UPLOAD, 'status', {'status': 413}),)


class TestSecondAttemptFaults(BreakerCells):
    GLANCE_PROFILE = 'http-store'


# Glance refuses the location of the first attempt (400): the plan moves
# on to the first upload attempt, whose create is faulted.
REFUSED = (('POST', r'^/v2/images/[^/]+/locations$', 'status',
            {'status': 400}),)
for _fault in ('503_2nd', 'reset_after_2nd', 'delay_2nd'):
    _add(TestSecondAttemptFaults, 'create2', _fault, before=REFUSED)
for _fault in ('503', 'reset_after', 'delay', 'restart'):
    _add(TestSecondAttemptFaults, 'delete_first', _fault, before=TOO_LARGE)


class TestLocationModeFaults(BreakerCells):
    """Create and read-back in location-first mode."""


for _fault in ('503', 'reset_after', 'delay', 'truncate', '502_after'):
    _add(TestLocationModeFaults, 'create_loc', _fault)
    _add(TestLocationModeFaults, 'get_loc', _fault)
# Not a cell: get_loc/503/always. Glance took the location (202) and goes
# active, but no read ever succeeds: the run cannot know, polls until
# activation_timeout and exits 1 naming the image (which is active).


class TestWithImageIdFaults(BreakerCells):
    """The caller's own image_id (Nova's path), not a derived one."""

    WITH_IMAGE_ID = True


for _cell in (('create', 'reset_after'), ('create', 'delay'),
              ('upload', '503'), ('upload', 'reset_after'),
              ('get', '503', 'once', 'cli'),
              ('get', 'truncate', 'once', 'cli'),
              ('delete', '503'), ('delete', 'restart'),
              ('schema', 'truncate')):
    # The library reads nothing back after an accepted upload; the CLI
    # reads the image to show it.
    _add(TestWithImageIdFaults, *_cell)


class TestConcurrentVariants(tf.TestConcurrentTries):
    """16 concurrent tries of one snapshot with random faults.

    With the caller's image_id, and for another project's server (image
    shared, member added).
    """

    def use_request(self, image_id=False, other_project=False):
        real = tf.fresh_request_dict
        image = str(uuid.uuid4())

        def fresh(project_id, user_id):
            data = real(project_id, user_id)
            if image_id:
                data['image_id'] = image
            if other_project:
                data['server']['project_id'] = self.new_project()
            return data
        self.useFixture(fixtures.MonkeyPatch(
            'tests.functional.test_faults.fresh_request_dict', fresh))

    def test_concurrent_tries_random_faults(self):
        self.use_request(image_id=True)
        self.run_rounds(2, 9300, 'library', self.one_try)

    def test_concurrent_tries_other_project(self):
        self.use_request(other_project=True)
        self.run_rounds(2, 9400, 'library', self.one_try)
