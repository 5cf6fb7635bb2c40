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

"""The production database's rules for an image record (design rule 2).

Glance stores an image in SQL tables (``glance/db/sqlalchemy/models.py``):
``images`` (``name`` ``String(255)``, ``min_disk``/``min_ram``
``Integer``), ``image_properties`` (``name`` ``String(255)``, unique with
``image_id``; ``value`` ``Text``) and ``image_members`` (``member``
``String(255)``).  SQLite, which Glance's own tests and a demo use,
accepts nearly anything there; the databases real clouds run Glance on
do not, and they refuse *inside* the create, which Glance answers with
HTTP 500 after the host already took its volume snapshots.  A plugin
cannot see which database a Glance uses, so :func:`check_record` applies
the rules of both everywhere (a record that passes is stored by SQLite,
MySQL/MariaDB and PostgreSQL alike):

* **MySQL/MariaDB** -- Glance's migrations create its tables with
  ``mysql_charset='utf8'``, i.e. ``utf8mb3`` with its default collation
  ``utf8mb3_general_ci``, whatever the server's default:

  - two property names of one image that the collation calls equal break
    the unique key ``(image_id, name)``: ``IntegrityError``.  The
    collation gives every character of the Basic Multilingual Plane one
    16-bit weight (case folded, accents of Latin, Greek and Cyrillic
    letters dropped, ``'ß'`` = ``'s'``, no expansions) and compares with
    ``PAD SPACE`` (trailing spaces do not count): :func:`collation_key`;
  - ``Text`` holds at most 65,535 **bytes** (UTF-8 here): "Data too long"
    under the strict ``sql_mode`` oslo.db sets (``TRADITIONAL``).

* **PostgreSQL** -- a ``text``/``varchar`` value cannot contain NUL
  (``U+0000``): "A string literal cannot contain NUL (0x00) characters".
  This holds for the image name, property names and values, and the
  member project id.

* **Every database** -- text is sent as UTF-8: a lone surrogate
  (``U+D800`` to ``U+DFFF``, which JSON's ``\\udXXX`` escapes can carry
  into a Python ``str``) has no UTF-8 form and fails in the driver.

Characters outside the Basic Multilingual Plane are refused by Glance
itself with 400 on every database (:mod:`.preflight`); lengths in
characters (``String(255)``) are the same on every database and checked
there too.  The limits were measured on MariaDB 10.11 and PostgreSQL 15
under Glance 33 (``tests/functional/test_database.py`` proves each rule
on both, and that the collation table below is the server's).
"""

from __future__ import annotations

import re
import typing as ty

from nova_snapshot_ext import exception

#: ``Text`` on MySQL/MariaDB: 2**16 - 1 bytes.
MAX_TEXT_BYTES = 65535

#: The weight classes of ``utf8mb3_general_ci`` (MariaDB 10.11, read with
#: ``WEIGHT_STRING()`` for every code point U+0000..U+FFFF): each string
#: holds the characters that weigh the same, its first character being
#: the weight.  Every character of the plane not listed weighs itself.
#: ``tests/functional/test_database.py`` compares it with the live server.
_CLASSES: tuple[str, ...] = (
    'AaÀÁÂÃÄÅàáâãäåĀāĂăĄąǍǎǞǟǠǡǺǻȀȁȂȃȦȧḀḁẠạẢảẤấẦầẨẩẪẫẬậẮắẰằẲẳẴẵẶặ',
    'BbḂḃḄḅḆḇ', 'CcÇçĆćĈĉĊċČčḈḉ', 'DdĎďḊḋḌḍḎḏḐḑḒḓ',
    'EeÈÉÊËèéêëĒēĔĕĖėĘęĚěȄȅȆȇȨȩḔḕḖḗḘḙḚḛḜḝẸẹẺẻẼẽẾếỀềỂểỄễỆệ', 'FfḞḟ',
    'GgĜĝĞğĠġĢģǦǧǴǵḠḡ', 'HhĤĥȞȟḢḣḤḥḦḧḨḩḪḫẖ',
    'IiÌÍÎÏìíîïĨĩĪīĬĭĮįİıǏǐȈȉȊȋḬḭḮḯỈỉỊị', 'JjĴĵǰ', 'KkĶķǨǩḰḱḲḳḴḵ',
    'LlĹĺĻļĽľḶḷḸḹḺḻḼḽ', 'MmḾḿṀṁṂṃ', 'NnÑñŃńŅņŇňǸǹṄṅṆṇṈṉṊṋ',
    'OoÒÓÔÕÖòóôõöŌōŎŏŐőƠơǑǒǪǫǬǭȌȍȎȏȪȫȬȭȮȯȰȱṌṍṎṏṐṑṒṓỌọỎỏỐốỒồỔổỖỗỘộỚớỜờỞởỠỡỢợ',
    'PpṔṕṖṗ', 'Qq', 'RrŔŕŖŗŘřȐȑȒȓṘṙṚṛṜṝṞṟ', 'SsßŚśŜŝŞşŠšſȘșṠṡṢṣṤṥṦṧṨṩẛ',
    'TtŢţŤťȚțṪṫṬṭṮṯṰṱẗ',
    'UuÙÚÛÜùúûüŨũŪūŬŭŮůŰűŲųƯưǓǔǕǖǗǘǙǚǛǜȔȕȖȗṲṳṴṵṶṷṸṹṺṻỤụỦủỨứỪừỬửỮữỰự',
    'VvṼṽṾṿ', 'WwŴŵẀẁẂẃẄẅẆẇẈẉẘ', 'XxẊẋẌẍ', 'YyÝýÿŶŷŸȲȳẎẏẙỲỳỴỵỶỷỸỹ',
    'ZzŹźŻżŽžẐẑẒẓẔẕ', 'ÆæǢǣǼǽ', 'Ðð', 'ØøǾǿ', 'Þþ', 'Đđ', 'Ħħ', 'Ĳĳ', 'Ŀŀ',
    'Łł', 'Ŋŋ', 'Œœ', 'Ŧŧ', 'Ɓɓ', 'Ƃƃ', 'Ƅƅ', 'Ɔɔ', 'Ƈƈ', 'Ɖɖ', 'Ɗɗ', 'Ƌƌ',
    'Ǝǝ', 'Əə', 'Ɛɛ', 'Ƒƒ', 'Ɠɠ', 'Ɣɣ', 'Ɩɩ', 'Ɨɨ', 'Ƙƙ', 'Ɯɯ', 'Ɲɲ', 'Ɵɵ',
    'Ƣƣ', 'Ƥƥ', 'Ʀʀ', 'Ƨƨ', 'Ʃʃ', 'Ƭƭ', 'Ʈʈ', 'Ʊʊ', 'Ʋʋ', 'Ƴƴ', 'Ƶƶ', 'ƷǮǯʒ',
    'Ƹƹ', 'Ƽƽ', 'Ǆǅǆ', 'Ǉǈǉ', 'Ǌǋǌ', 'Ǥǥ', 'Ǳǲǳ', 'Ƕƕ', 'Ƿƿ', 'Ȝȝ', 'Ȣȣ',
    'Ȥȥ', 'ΑΆάαἀἁἂἃἄἅἆἇἈἉἊἋἌἍἎἏὰᾀᾁᾂᾃᾄᾅᾆᾇᾈᾉᾊᾋᾌᾍᾎᾏᾰᾱᾲᾳᾴᾶᾷᾸᾹᾺᾼ', 'Ββϐ', 'Γγ',
    'Δδ', 'ΕΈέεἐἑἒἓἔἕἘἙἚἛἜἝὲῈ', 'Ζζ',
    'ΗΉήηἠἡἢἣἤἥἦἧἨἩἪἫἬἭἮἯὴᾐᾑᾒᾓᾔᾕᾖᾗᾘᾙᾚᾛᾜᾝᾞᾟῂῃῄῆῇῊῌ', 'Θθϑ',
    'Ι\u0345ΊΐΪίιϊἰἱἲἳἴἵἶἷἸἹἺἻἼἽἾἿὶιῐῑῒῖῗῘῙῚ', 'Κκϰ', 'Λλ', 'Μµμ', 'Νν', 'Ξξ',
    'ΟΌοόὀὁὂὃὄὅὈὉὊὋὌὍὸῸ', 'Ππϖ', 'ΡρϱῤῥῬ', 'Σςσϲ', 'Ττ',
    'ΥΎΫΰυϋύὐὑὒὓὔὕὖὗὙὛὝὟὺῠῡῢῦῧῨῩῪ', 'Φφϕ', 'Χχ', 'Ψψ',
    'ΩΏωώὠὡὢὣὤὥὦὧὨὩὪὫὬὭὮὯὼᾠᾡᾢᾣᾤᾥᾦᾧᾨᾩᾪᾫᾬᾭᾮᾯῲῳῴῶῷῺῼ', 'ϒϓϔ', 'Ϛϛ', 'Ϝϝ', 'Ϟϟ',
    'Ϡϡ', 'Ϣϣ', 'Ϥϥ', 'Ϧϧ', 'Ϩϩ', 'Ϫϫ', 'Ϭϭ', 'Ϯϯ', 'Ђђ', 'Єє', 'Ѕѕ', 'ІЇії',
    'Јј', 'Љљ', 'Њњ', 'Ћћ', 'Џџ', 'АаӐӑӒӓ', 'Бб', 'Вв', 'ГЃгѓ', 'Дд',
    'ЕЀЁеѐёӖӗ', 'ЖжӁӂӜӝ', 'ЗзӞӟ', 'ИЍиѝӢӣӤӥ', 'Йй', 'КЌкќ', 'Лл', 'Мм', 'Нн',
    'ОоӦӧ', 'Пп', 'Рр', 'Сс', 'Тт', 'УЎуўӮӯӰӱӲӳ', 'Фф', 'Хх', 'Цц', 'ЧчӴӵ',
    'Шш', 'Щщ', 'Ъъ', 'ЫыӸӹ', 'Ьь', 'ЭэӬӭ', 'Юю', 'Яя', 'Ѡѡ', 'Ѣѣ', 'Ѥѥ',
    'Ѧѧ', 'Ѩѩ', 'Ѫѫ', 'Ѭѭ', 'Ѯѯ', 'Ѱѱ', 'Ѳѳ', 'ѴѵѶѷ', 'Ѹѹ', 'Ѻѻ', 'Ѽѽ', 'Ѿѿ',
    'Ҁҁ', 'Ҍҍ', 'Ҏҏ', 'Ґґ', 'Ғғ', 'Ҕҕ', 'Җҗ', 'Ҙҙ', 'Ққ', 'Ҝҝ', 'Ҟҟ', 'Ҡҡ',
    'Ңң', 'Ҥҥ', 'Ҧҧ', 'Ҩҩ', 'Ҫҫ', 'Ҭҭ', 'Үү', 'Ұұ', 'Ҳҳ', 'Ҵҵ', 'Ҷҷ', 'Ҹҹ',
    'Һһ', 'Ҽҽ', 'Ҿҿ', 'Ӄӄ', 'Ӈӈ', 'Ӌӌ', 'Ӕӕ', 'ӘәӚӛ', 'Ӡӡ', 'ӨөӪӫ', 'Աա',
    'Բբ', 'Գգ', 'Դդ', 'Եե', 'Զզ', 'Էէ', 'Ըը', 'Թթ', 'Ժժ', 'Իի', 'Լլ', 'Խխ',
    'Ծծ', 'Կկ', 'Հհ', 'Ձձ', 'Ղղ', 'Ճճ', 'Մմ', 'Յյ', 'Նն', 'Շշ', 'Ոո', 'Չչ',
    'Պպ', 'Ջջ', 'Ռռ', 'Սս', 'Վվ', 'Տտ', 'Րր', 'Ցց', 'Ււ', 'Փփ', 'Քք', 'Օօ',
    'Ֆֆ', 'Άά', 'Έέ', 'Ήή', 'Ίί', 'Ύύ', 'Όό', 'Ώώ', 'Ⅰⅰ', 'Ⅱⅱ', 'Ⅲⅲ', 'Ⅳⅳ',
    'Ⅴⅴ', 'Ⅵⅵ', 'Ⅶⅶ', 'Ⅷⅷ', 'Ⅸⅸ', 'Ⅹⅹ', 'Ⅺⅺ', 'Ⅻⅻ', 'Ⅼⅼ', 'Ⅽⅽ', 'Ⅾⅾ', 'Ⅿⅿ',
    'Ⓐⓐ', 'Ⓑⓑ', 'Ⓒⓒ', 'Ⓓⓓ', 'Ⓔⓔ', 'Ⓕⓕ', 'Ⓖⓖ', 'Ⓗⓗ', 'Ⓘⓘ', 'Ⓙⓙ', 'Ⓚⓚ', 'Ⓛⓛ',
    'Ⓜⓜ', 'Ⓝⓝ', 'Ⓞⓞ', 'Ⓟⓟ', 'Ⓠⓠ', 'Ⓡⓡ', 'Ⓢⓢ', 'Ⓣⓣ', 'Ⓤⓤ', 'Ⓥⓥ', 'Ⓦⓦ', 'Ⓧⓧ',
    'Ⓨⓨ', 'Ⓩⓩ', 'Ａａ', 'Ｂｂ', 'Ｃｃ', 'Ｄｄ', 'Ｅｅ', 'Ｆｆ', 'Ｇｇ', 'Ｈｈ', 'Ｉｉ', 'Ｊｊ',
    'Ｋｋ', 'Ｌｌ', 'Ｍｍ', 'Ｎｎ', 'Ｏｏ', 'Ｐｐ', 'Ｑｑ', 'Ｒｒ', 'Ｓｓ', 'Ｔｔ', 'Ｕｕ', 'Ｖｖ',
    'Ｗｗ', 'Ｘｘ', 'Ｙｙ', 'Ｚｚ',
)


_WEIGHTS: dict[str, str] = {
    char: members[0] for members in _CLASSES for char in members}

#: :data:`_WEIGHTS` as a ``str.translate`` table (code point -> weight):
#: the fold runs in C, one pass, whatever the length.
_FOLD = str.maketrans(_WEIGHTS)


def collation_key(text: str) -> str:
    """The value ``utf8mb3_general_ci`` compares ``text`` by.

    Two strings are equal under the collation exactly when their keys are
    equal: each character replaced by its weight, then trailing spaces
    removed (``PAD SPACE``).

    :param text: Basic Multilingual Plane text (Glance refuses the rest).
    :returns: the key, a ``str`` of weights.
    """
    if text.isascii():
        # The only ASCII characters of the table are the letters, whose
        # weight is the capital (the unit tests compare every one).
        return text.upper().rstrip(' ')
    return text.translate(_FOLD).rstrip(' ')


#: Glance's own property namespace (it writes ``os_glance_import_task``,
#: ``os_glance_hash_op_host`` ... itself during imports and location adds).
GLANCE_NAMESPACE = 'os_glance'
_GLANCE_NAMESPACE_KEY = collation_key(GLANCE_NAMESPACE)


def in_glance_namespace(key: str) -> bool:
    """Whether ``key`` is in Glance's ``os_glance`` namespace on MySQL.

    Glance itself checks the prefix exactly (``OS_GLANCE_X`` is accepted
    as a custom property), but under ``utf8mb3_general_ci`` such a key is
    the same row as the ``os_glance_*`` property Glance writes during a
    location add or an import: ``OS_GLANCE_IMPORT_TASK`` makes every
    location add of its image answer 409 on a MySQL/MariaDB Glance.

    :param key: a property name.
    :returns: True when the collation folds its start to ``os_glance``.
    """
    return collation_key(key[:len(GLANCE_NAMESPACE) + 8]).startswith(
        _GLANCE_NAMESPACE_KEY)


#: The characters no production database stores: NUL (PostgreSQL) and
#: the lone surrogates (no UTF-8 form).
_UNSTORABLE_RE = re.compile('[\x00\ud800-\udfff]')


def _check_text(what: str, key: str, text: str) -> None:
    """Refuse a character a production database cannot store."""
    if text.isascii():
        if '\x00' not in text:
            return
        found = '\x00'
    else:
        match = _UNSTORABLE_RE.search(text)
        if match is None:
            return
        found = match.group()
    if found == '\x00':
        raise exception.UnstorableCharacter(
            what=what, property=_shown(key), char='U+0000 (NUL)',
            database='a PostgreSQL')
    raise exception.UnstorableCharacter(
        what=what, property=_shown(key),
        char='U+%04X (a lone surrogate, which has no UTF-8 form)'
        % ord(found), database='any')


def _shown(key: str) -> str:
    """A key as a message shows it: control characters escaped, cut."""
    text = ''.join(char if char.isprintable() else
                   char.encode('unicode_escape', 'backslashreplace'
                               ).decode('ascii') for char in key)
    return text if len(text) <= 80 else text[:77] + '...'


#: Property name -> its :func:`collation_key`, for names that passed the
#: storable-text check (every snapshot carries mostly the same names).
_NAME_KEYS: dict[str, str] = {}


def check_record(name: str, properties: ty.Mapping[str, ty.Any],
                 optional: ty.Collection[str] = (),
                 member: str | None = None) -> list[tuple[str, str]]:
    """Refuse a record MySQL/MariaDB or PostgreSQL under Glance would.

    Nothing is changed: a collision that involves an optional
    (plugin-added) key is answered by leaving that key out, which the
    caller applies.

    :param name: the image name.
    :param properties: the properties as they will be sent.
    :param optional: the keys the record can do without.
    :param member: the project the image is shared with, if any.
    :returns: ``[(key to leave out, why)]``.
    :raises UnstorableCharacter: NUL (PostgreSQL) or a lone surrogate in
        the name, a property name or value, or the member project.
    :raises PropertyKeysCollide: two property names equal under
        ``utf8mb3_general_ci``, both the caller's; both are named.
    :raises PropertyValueTooLarge: a property value over 65,535 bytes of
        UTF-8; the key and the size are named.
    """
    _check_text('attribute', 'name', name)
    if isinstance(member, str):
        _check_text('member project', member, member)
    left_out: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for key in sorted(properties):
        value = properties[key]
        folded = _NAME_KEYS.get(key)
        if folded is None:
            _check_text('property name', key, key)
            folded = collation_key(key)
            if len(_NAME_KEYS) >= 4096:
                _NAME_KEYS.clear()
            _NAME_KEYS[key] = folded
        if isinstance(value, str):
            _check_text('property', key, value)
            # Fewer than MAX / 3 characters cannot reach the limit: skip
            # the encoding for every ordinary value.
            if len(value) * 3 > MAX_TEXT_BYTES:
                # ASCII (the mappings' JSON): one byte a character.
                size = (len(value) if value.isascii()
                        else len(value.encode('utf-8')))
                if size > MAX_TEXT_BYTES:
                    raise exception.PropertyValueTooLarge(
                        property=_shown(key), size=size,
                        limit=MAX_TEXT_BYTES)
        other = seen.get(folded)
        if other is None:
            seen[folded] = key
            continue
        dropped = [k for k in (key, other) if k in optional]
        if not dropped:
            raise exception.PropertyKeysCollide(first=_shown(other),
                                                second=_shown(key))
        # One of them is the plugin's own (self-description, a driver's
        # stamp): the caller's key wins, as with the property quota.
        kept = other if dropped[0] == key else key
        seen[folded] = kept
        left_out.append((dropped[0], 'left out %s: it is the same name as '
                         '%s in Glance\'s MySQL/MariaDB table'
                         % (_shown(dropped[0]), _shown(kept))))
    return left_out
