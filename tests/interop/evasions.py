"""Files built so that a scanner and torch 2.13 could read different bytes (issue 26), one
generator per construction, crafted byte by byte (nothing here unpickles what it writes).

Families: zip (which end record, zip64 record, central directory or extra field miniz
believes; names miniz's case-insensitive lookup matches), TorchScript context (a checkpoint
zip with a `constants.pkl` that is not the archive's own), legacy tar (PAX/GNU header
precedence, numbers `tarfile` reads, member types `tarfile` reads as files, later pickles of
the side tables, tar-vs-legacy polyglots), legacy stream (a payload in the storage-keys
pickle), pickle (frames, INT/LONG/memo text as CPython reads it, BUILD oddities), and
safetensors (a benign file, which torch.load reads with the safetensors library by its
suffix). No safetensors/pickle polyglot is here (none found): torch unpickles only a file not named
`.safetensors`, from byte 0, where the safetensors header length sits; a pickle opcode
sequence whose first 8 bytes are a plausible length leaves the pickle resuming inside the
JSON header, which then has to be both valid JSON and valid pickle.

Every malicious case calls a payload global (`os.system("touch MARKER")`); whether torch
reaches it is not assumed but measured with the oracle (torch_oracle.py): a case torch does
not reach is no attack and is reported as such (`attack=False`), never asserted on.

Standalone: python tests/interop/evasions.py OUTDIR [--markdown=FILE]
  writes every case and prints one line per file: name, family, torch reached the payload,
  torch.load completed, ckpt's exit status and verdict (CKPT_BIN, default /tmp/ckpt-head/ckpt).
"""
import json
import os
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path

PAYLOAD = "os.system"
MARKER = "MARKER"


# ================================================================== pickle pieces
def proto(n=2):
    return b"\x80" + bytes([n])


def short(s):
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


def binuni(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def call_body(module="os", name="system", arg=f"touch {MARKER}"):
    """module.name(arg) with GLOBAL, no PROTO, no STOP: leaves the result on the stack."""
    return b"c" + f"{module}\n{name}\n".encode() + b"(" + binuni(arg) + b"tR"


def payload_pickle(p=2):
    return proto(p) + call_body() + b"."


BENIGN = proto() + b"}."
MAGIC = bytes.fromhex("80028a0a6cfc9c46f9206aa85019") + b"."   # 0x1950a86a20f9469cfc6c
PROTOCOL = proto() + b"M\xe9\x03."                              # 1001
SYS_INFO = (proto() + b"}(" + binuni("protocol_version") + b"M\xe9\x03" + binuni("little_endian")
            + b"\x88" + binuni("type_sizes") + b"}(" + binuni("short") + b"K\x02" + binuni("int")
            + b"K\x04" + binuni("long") + b"K\x04uu.")
EMPTY_LIST = proto() + b"]."


def pint(n):
    return proto() + b"K" + bytes([n]) + b"."


# ================================================================== zip pieces
def local(name, data, extra=b"", ver=20, csize=None, usize=None):
    nb = name.encode()
    crc = zlib.crc32(data)
    return (b"PK\x03\x04" + struct.pack("<HHHHHIIIHH", ver, 0, 0, 0, 0x21, crc,
                                          len(data) if csize is None else csize,
                                          len(data) if usize is None else usize,
                                          len(nb), len(extra)) + nb + extra + data)


def central(name, data, offset, extra=b"", ver=20, csize=None, usize=None):
    nb = name.encode()
    return (b"PK\x01\x02" + struct.pack("<HHHHHHIIIHHHHHII", ver, ver, 0, 0, 0, 0x21,
                                          zlib.crc32(data),
                                          len(data) if csize is None else csize,
                                          len(data) if usize is None else usize,
                                          len(nb), len(extra), 0, 0, 0, 0, offset)
            + nb + extra)


def eocd(count, cd_size, cd_offset, comment=b"", comment_len=None):
    return (b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, count, count, cd_size, cd_offset,
                                        len(comment) if comment_len is None else comment_len)
            + comment)


def zip64_record(count, cd_size, cd_offset, rec_size=44):
    return (b"PK\x06\x06" + struct.pack("<QHHIIQQQQ", rec_size, 45, 45, 0, 0, count, count,
                                        cd_size, cd_offset))


def zip64_locator(record_offset):
    return b"PK\x06\x07" + struct.pack("<IQI", 0, record_offset, 1)


def zip64_extra(*values):
    body = b"".join(struct.pack("<Q", v) for v in values)
    return struct.pack("<HH", 1, len(body)) + body


class ZipParts:
    """Local entries laid out one after another; `cd(...)` builds central directories."""

    def __init__(self):
        self.buf = bytearray()
        self.at = {}

    def add(self, key, name, data, **kw):
        self.at[key] = (len(self.buf), name, data)
        self.buf += local(name, data, **kw)
        return self

    def cd(self, *keys, names=None, extras=None, offsets=None):
        out = b""
        for i, key in enumerate(keys):
            off, name, data = self.at[key]
            name = (names or {}).get(key, name)
            extra = (extras or {}).get(key, b"")
            off = (offsets or {}).get(key, off)
            out += central(name, data, off, extra=extra)
        return out


def torch_parts(data_pkl, prefix="archive", extra_records=()):
    """A torch.save-like archive's local entries: keys data, version, byteorder (+ extra)."""
    z = ZipParts()
    z.add("data", f"{prefix}/data.pkl", data_pkl)
    for key, name, data in extra_records:
        z.add(key, f"{prefix}/{name}", data)
    z.add("byteorder", f"{prefix}/byteorder", b"little")
    z.add("version", f"{prefix}/version", b"3\n")
    return z


def plain_zip(data_pkl, prefix="archive", extra_records=()):
    z = torch_parts(data_pkl, prefix, extra_records)
    keys = list(z.at)
    cd = z.cd(*keys)
    return bytes(z.buf) + cd + eocd(len(keys), len(cd), len(z.buf))


def two_data_parts():
    """Local entries for a benign and a malicious `archive/data.pkl` (same name)."""
    z = ZipParts()
    z.add("data", "archive/data.pkl", BENIGN)
    z.add("evil", "archive/data.pkl", payload_pickle())
    z.add("byteorder", "archive/byteorder", b"little")
    z.add("version", "archive/version", b"3\n")
    return z


# ------------------------------------------------------------------ zip cases
def zip_zip64_locator_before_plain_eocd():
    """The plain end record names the benign directory; a zip64 locator right before it
    names a zip64 record naming the malicious one. miniz takes the zip64 values whenever a
    locator precedes the end record."""
    z = two_data_parts()
    ben = z.cd("data", "byteorder", "version")
    mal = z.cd("evil", "byteorder", "version")
    body = bytes(z.buf)
    mal_at = len(body)
    ben_at = mal_at + len(mal)
    rec_at = ben_at + len(ben)
    return (body + mal + ben + zip64_record(3, len(mal), mal_at) + zip64_locator(rec_at)
            + eocd(3, len(ben), ben_at))


def zip_comment_past_eof():
    """The end record's comment length runs past the end of the file (miniz ignores it)."""
    return plain_zip(payload_pickle())[:-2] + struct.pack("<H", 300)


def zip_comment_past_eof_benign():
    return plain_zip(BENIGN)[:-2] + struct.pack("<H", 300)


def zip_two_end_records():
    """End record 1 (comment covering end record 2) names the benign directory; end record
    2, inside the comment, names the malicious one. miniz takes the last signature."""
    z = two_data_parts()
    ben = z.cd("data", "byteorder", "version")
    mal = z.cd("evil", "byteorder", "version")
    body = bytes(z.buf)
    ben_at = len(body)
    mal_at = ben_at + len(ben)
    inner = eocd(3, len(mal), mal_at)
    return body + ben + mal + eocd(3, len(ben), ben_at, comment=inner)


def zip_two_end_records_reversed():
    z = two_data_parts()
    ben = z.cd("data", "byteorder", "version")
    mal = z.cd("evil", "byteorder", "version")
    body = bytes(z.buf)
    ben_at = len(body)
    mal_at = ben_at + len(ben)
    inner = eocd(3, len(ben), ben_at)
    return body + ben + mal + eocd(3, len(mal), mal_at, comment=inner)


def zip_cd_after_end_record():
    """The central directory sits after the end record that names it."""
    z = torch_parts(payload_pickle())
    cd = z.cd("data", "byteorder", "version")
    body = bytes(z.buf)
    end = eocd(3, len(cd), len(body) + 22)
    return body + end + cd


def zip_cd_after_end_record_shadow():
    """A benign directory before the end record (where it would be), the malicious one the
    end record names after it."""
    z = two_data_parts()
    ben = z.cd("data", "byteorder", "version")
    mal = z.cd("evil", "byteorder", "version")
    body = bytes(z.buf) + ben
    return body + eocd(3, len(mal), len(body) + 22) + mal


def zip_zip64_record_size_off():
    """A zip64 record whose own size field is off (1000, not 44); miniz only checks it is at
    least 44. The zip64 record names the malicious directory, the plain end record (with
    0xFFFFFFFF offset) needs it."""
    z = two_data_parts()
    mal = z.cd("evil", "byteorder", "version")
    body = bytes(z.buf)
    mal_at = len(body)
    rec_at = mal_at + len(mal)
    return (body + mal + zip64_record(3, len(mal), mal_at, rec_size=1000)
            + zip64_locator(rec_at) + eocd(0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF))


def zip_zip64_record_size_off_shadow():
    z = two_data_parts()
    ben = z.cd("data", "byteorder", "version")
    mal = z.cd("evil", "byteorder", "version")
    body = bytes(z.buf)
    mal_at = len(body)
    ben_at = mal_at + len(mal)
    rec_at = ben_at + len(ben)
    return (body + mal + ben + zip64_record(3, len(mal), mal_at, rec_size=1000)
            + zip64_locator(rec_at) + eocd(3, len(ben), ben_at))


def _two_zip64_extras(first_evil):
    evil = payload_pickle()
    benign = BENIGN[:-1] + b"." * (len(evil) - len(BENIGN) + 1)
    z = ZipParts()
    z.add("data", "archive/data.pkl", benign)
    z.add("evil", "archive/data.pkl", evil)
    z.add("byteorder", "archive/byteorder", b"little")
    z.add("version", "archive/version", b"3\n")
    evil_at, ben_at = z.at["evil"][0], z.at["data"][0]
    firsts = (evil_at, ben_at) if first_evil else (ben_at, evil_at)
    extra = zip64_extra(firsts[0]) + zip64_extra(firsts[1])
    cd = z.cd("evil" if first_evil else "data", "byteorder", "version",
              extras={"evil": extra, "data": extra}, offsets={"evil": 0xFFFFFFFF,
                                                              "data": 0xFFFFFFFF})
    body = bytes(z.buf)
    return body + cd + eocd(3, len(cd), len(body))


def zip_two_zip64_extras_first_evil():
    """data.pkl's directory entry has offset 0xFFFFFFFF and two zip64 extra fields: the
    first points at the malicious local entry, the second at the benign one."""
    return _two_zip64_extras(True)


def zip_two_zip64_extras_second_evil():
    return _two_zip64_extras(False)


def zip_trailing_end_record():
    """A complete archive (end record, no comment) naming the benign directory, then a
    second end record appended after it naming the malicious one: miniz takes the last
    end-record signature with 22 bytes after it and does not check the comment length."""
    z = two_data_parts()
    ben = z.cd("data", "byteorder", "version")
    mal = z.cd("evil", "byteorder", "version")
    body = bytes(z.buf)
    ben_at = len(body)
    mal_at = ben_at + len(ben)
    return (body + ben + mal + eocd(3, len(ben), ben_at) + eocd(3, len(mal), mal_at))


def zip_zip64_extra_without_ffff():
    """data.pkl's directory offset names the malicious entry and is not 0xFFFFFFFF; a zip64
    extra field naming the benign entry is present anyway. miniz reads zip64 extra values
    only for fields that are 0xFFFFFFFF."""
    z = two_data_parts()
    cd = z.cd("evil", "byteorder", "version",
              extras={"evil": zip64_extra(z.at["data"][0])})
    body = bytes(z.buf)
    return body + cd + eocd(3, len(cd), len(body))


def zip_zip64_end_consistent():
    """A zip64 end record and locator before an end record, all three naming the same
    directory (the layout torch.save writes past 65535 entries or 4 GiB)."""
    z = torch_parts(payload_pickle())
    keys = list(z.at)
    cd = z.cd(*keys)
    body = bytes(z.buf)
    rec_at = len(body) + len(cd)
    return (body + cd + zip64_record(len(keys), len(cd), len(body)) + zip64_locator(rec_at)
            + eocd(len(keys), len(cd), len(body)))


def _unknown_extra(key):
    z = torch_parts(payload_pickle())
    keys = list(z.at)
    cd = z.cd(*keys, extras={key: struct.pack("<HH", 0xCAFE, 4) + b"\0" * 4})
    return bytes(z.buf) + cd + eocd(len(keys), len(cd), len(z.buf))


def zip_unknown_extra_field():
    """data.pkl's directory entry carries an extra field of an unknown id (0xCAFE, as jar
    files have), which miniz skips."""
    return _unknown_extra("data")


def zip_short_zip64_extra():
    """data.pkl's directory entry carries a 4-byte zip64 extra field (id 1) although none of
    its fields is 0xFFFFFFFF: miniz reads zip64 values only for such fields and skips it."""
    z = torch_parts(payload_pickle())
    keys = list(z.at)
    cd = z.cd(*keys, extras={"data": struct.pack("<HHI", 1, 4, 0)})
    return bytes(z.buf) + cd + eocd(len(keys), len(cd), len(z.buf))


def unicode_path_extra(name, new_name):
    """Info-ZIP's Unicode Path extra field (0x7075): version 1, the CRC-32 of the header's
    own name, the name to use instead."""
    body = b"\x01" + struct.pack("<I", zlib.crc32(name.encode())) + new_name.encode()
    return struct.pack("<HH", 0x7075, len(body)) + body


def zip_unicode_path_extra():
    """The malicious entry is named archive/data.pkl with a Unicode Path extra field saying
    archive/junk.pkl; the benign one is named archive/xdata.pkl with one saying
    archive/data.pkl. miniz ignores the extra field (torch reads the malicious one); a
    reader that honours it reads the benign one."""
    z = ZipParts()
    z.add("evil", "archive/data.pkl", payload_pickle())
    z.add("data", "archive/xdata.pkl", BENIGN)
    z.add("byteorder", "archive/byteorder", b"little")
    z.add("version", "archive/version", b"3\n")
    cd = z.cd("evil", "data", "byteorder", "version", extras={
        "evil": unicode_path_extra("archive/data.pkl", "archive/junk.pkl"),
        "data": unicode_path_extra("archive/xdata.pkl", "archive/data.pkl")})
    return bytes(z.buf) + cd + eocd(4, len(cd), len(z.buf))


def zip_short_unicode_path_extra():
    """A 4-byte Unicode Path extra field (too short to hold its own header) on `version`:
    miniz skips it."""
    z = torch_parts(payload_pickle())
    keys = list(z.at)
    cd = z.cd(*keys, extras={"version": struct.pack("<HHI", 0x7075, 4, 0)})
    return bytes(z.buf) + cd + eocd(len(keys), len(cd), len(z.buf))


def zip_unknown_extra_field_on_version():
    """The same extra field on the `version` record's directory entry."""
    return _unknown_extra("version")


def zip_prepended_shadow():
    """Two directories of the same size: the end record's offset names the malicious one
    (absolute, as miniz reads it); where the end record sits implies the benign one, offset
    by 'prepended data' (how the zip crate and Python's zipfile correct a shifted archive)."""
    z = ZipParts()
    z.add("pad", "archive/.pad", b"\0" * 512)
    z.add("data", "archive/data.pkl", BENIGN)
    z.add("evil", "archive/data.pkl", payload_pickle())
    z.add("byteorder", "archive/byteorder", b"little")
    z.add("version", "archive/version", b"3\n")
    mal = z.cd("evil", "byteorder", "version")
    body = bytes(z.buf)
    mal_at = len(body)
    ben_at = mal_at + len(mal)
    shift = ben_at - mal_at
    ben = z.cd("data", "byteorder", "version",
               offsets={k: z.at[k][0] - shift for k in ("data", "byteorder", "version")})
    assert len(ben) == len(mal)
    return body + mal + ben + eocd(3, len(mal), mal_at)


def _dup_names(evil_first):
    z = two_data_parts()
    order = ("evil", "data") if evil_first else ("data", "evil")
    cd = z.cd(*order, "byteorder", "version")
    body = bytes(z.buf)
    return body + cd + eocd(4, len(cd), len(body))


def zip_duplicate_data_pkl_evil_first():
    """Two directory entries named archive/data.pkl; miniz's binary search picks one."""
    return _dup_names(True)


def zip_duplicate_data_pkl_evil_last():
    return _dup_names(False)


def zip_name_case():
    """The only pickle is named archive/DATA.PKL: miniz's lookup ignores case, so torch
    reads it as archive/data.pkl."""
    z = ZipParts()
    z.add("data", "archive/DATA.PKL", payload_pickle())
    z.add("byteorder", "archive/byteorder", b"little")
    z.add("version", "archive/version", b"3\n")
    cd = z.cd("data", "byteorder", "version")
    return bytes(z.buf) + cd + eocd(3, len(cd), len(z.buf))


def zip_name_case_shadow():
    """archive/data.pkl benign and archive/Data.pkl malicious (sorted before it)."""
    z = ZipParts()
    z.add("evil", "archive/Data.pkl", payload_pickle())
    z.add("data", "archive/data.pkl", BENIGN)
    z.add("byteorder", "archive/byteorder", b"little")
    z.add("version", "archive/version", b"3\n")
    cd = z.cd("evil", "data", "byteorder", "version")
    return bytes(z.buf) + cd + eocd(4, len(cd), len(z.buf))


def zip_local_name_differs():
    """The directory says archive/data.pkl; the local header names something else."""
    z = ZipParts()
    z.add("data", "archive/notes.txt", payload_pickle())
    z.add("byteorder", "archive/byteorder", b"little")
    z.add("version", "archive/version", b"3\n")
    cd = z.cd("data", "byteorder", "version", names={"data": "archive/data.pkl"})
    return bytes(z.buf) + cd + eocd(3, len(cd), len(z.buf))


def stack_global(module, name):
    return short(module) + short(name) + b"\x93"


def ts_context(payload_body, constants_at="foo/constants.pkl"):
    data = proto(4) + payload_body + b"."
    return plain_zip(data, extra_records=[("constants", constants_at, proto(2) + b").")])


def ts_nested_constants_set_data():
    """A checkpoint zip with archive/foo/constants.pkl (torch dispatches to torch.jit.load
    only on archive/constants.pkl) whose data.pkl calls torch.jit._pickle.__loader__.set_data
    (SourceFileLoader.set_data writes a file) through STACK_GLOBAL."""
    body = (stack_global("torch.jit._pickle", "__loader__.set_data")
            + b"(" + binuni(MARKER) + b"C\x02hi" + b"tR")
    return ts_context(body)


def ts_nested_constants_os_system():
    return ts_context(call_body())


def ts_nested_constants_torch_class():
    """A TorchScript-like data.pkl (a `__torch__` class built with NEWOBJ) with its
    constants.pkl under archive/foo/: torch does not dispatch to torch.jit.load and
    unpickles it with Python's pickle, asking for the `__torch__` name."""
    body = b"c__torch__.torch.nn.modules.linear\nLinear\n)\x81"
    return ts_context(body)


def octal(n, width):
    return b"%0*o\0" % (width - 1, n)


def tar_header(name, size, typ=b"0", linkname=b"", fields=None, raw=None):
    """A ustar header; `fields` replaces a field (name -> bytes, padded with NUL), `raw`
    patches bytes at offsets after the checksum is computed (if 'chksum' not in fields)."""
    h = bytearray(512)
    nb = name.encode() if isinstance(name, str) else name
    h[0:len(nb)] = nb
    h[100:108] = octal(0o644, 8)
    h[108:116] = octal(0, 8)
    h[116:124] = octal(0, 8)
    h[124:136] = octal(size, 12)
    h[136:148] = octal(0, 12)
    h[156:157] = typ
    h[157:157 + len(linkname)] = linkname
    h[257:265] = b"ustar\x0000"
    offs = {"mode": (100, 8), "size": (124, 12), "mtime": (136, 12), "uid": (108, 8),
            "chksum": (148, 8), "prefix": (345, 155)}
    for key, value in (fields or {}).items():
        at, width = offs[key]
        h[at:at + width] = value.ljust(width, b"\0")
    if "chksum" not in (fields or {}):
        h[148:156] = b" " * 8
        h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def pad(data):
    return data + b"\0" * (-len(data) % 512)


def member(name, data, typ=b"0", **kw):
    return tar_header(name, len(data), typ, **kw) + pad(data)


def pax_records(pairs):
    out = b""
    for k, v in pairs:
        rec = f" {k}={v}\n".encode()
        n = len(rec) + 1
        while len(str(n)) + len(rec) != n:
            n += 1
        out += str(n).encode() + rec
    return out


def pax(pairs, typ=b"x", body=None):
    body = pax_records(pairs) if body is None else body
    return tar_header("././@PaxHeader", len(body), typ) + pad(body)


def gnu_long(name, typ=b"L"):
    body = name.encode() + b"\0"
    return tar_header("././@LongLink", len(body), typ) + pad(body)


STORAGES = pint(0) + EMPTY_LIST   # num_storages = 0, storage_views = []
TENSORS = pint(0)                 # num_tensors = 0


def side_tables(storages=STORAGES, tensors=TENSORS):
    return member("storages", storages) + member("tensors", tensors)


def tar_end():
    return b"\0" * 1024


def tar_file(*blocks):
    return b"".join(blocks) + tar_end()


# ------------------------------------------------------------------ tar cases
def tar_nested_pax():
    """PAX(path=pickle) then PAX(path=notes) then a member: tarfile applies the outer PAX
    last, so the member is `pickle` (the last `pickle` wins)."""
    return tar_file(side_tables(), member("pickle", BENIGN),
                    pax([("path", "pickle")]), pax([("path", "notes")]),
                    member("notes", payload_pickle()))


def tar_gnu_long_outside_pax():
    """GNU long name `pickle` wrapping a PAX header path=notes: the outer one wins."""
    return tar_file(side_tables(), member("pickle", BENIGN), gnu_long("pickle"),
                    pax([("path", "notes")]), member("notes", payload_pickle()))


def tar_pax_outside_gnu_long():
    return tar_file(side_tables(), member("pickle", BENIGN), pax([("path", "pickle")]),
                    gnu_long("notes"), member("notes", payload_pickle()))


def tar_gnu_sparse_name():
    """PAX records path=notes then GNU.sparse.name=pickle: tarfile sets the name from each
    in turn, so GNU.sparse.name (later) wins."""
    return tar_file(side_tables(), member("pickle", BENIGN),
                    pax([("path", "notes"), ("GNU.sparse.name", "pickle")]),
                    member("notes", payload_pickle()))


def tar_pax_record_in_padding():
    """The PAX header's size covers path=notes; a path=pickle record follows in the block
    padding, and tarfile parses the whole block."""
    rec = pax_records([("path", "notes")])
    body = rec + pax_records([("path", "pickle")])
    hdr = tar_header("././@PaxHeader", len(rec), b"x")
    return tar_file(side_tables(), member("pickle", BENIGN), hdr + pad(body),
                    member("notes", payload_pickle()))


def tar_global_header():
    """A global PAX header path=pickle renames every later member."""
    return tar_file(side_tables(), member("pickle", BENIGN), pax([("path", "pickle")], b"g"),
                    member("notes", payload_pickle()))


def tar_global_header_size():
    """A global PAX header `size` applies to the later `pickle`, whose ustar size is 0."""
    p = payload_pickle()
    return tar_file(side_tables(), pax([("size", str(len(p)))], b"g"),
                    tar_header("pickle", 0) + pad(p))


def _num_case(field, text, data=None):
    data = data or payload_pickle()
    return tar_file(side_tables(), tar_header("pickle", len(data), fields={field: text})
                    + pad(data))


def tar_num_mode_0o():
    return _num_case("mode", b"0o0")


def tar_num_mode_underscore():
    return _num_case("mode", b"0_644")


def tar_num_size_0o():
    return _num_case("size", b"0o%o" % len(payload_pickle()))


def tar_num_size_underscore():
    s = b"%o" % len(payload_pickle())
    return _num_case("size", s[:1] + b"_" + s[1:])


def tar_num_size_trailing_1c():
    return _num_case("size", b"%o\x1c" % len(payload_pickle()))


def tar_num_size_leading_space():
    return _num_case("size", b"  %o  " % len(payload_pickle()))


def tar_num_mtime_1_024():
    return _num_case("mtime", b"1_024")


def tar_num_chksum_0o():
    h = bytearray(tar_header("pickle", len(payload_pickle())))
    h[148:156] = b" " * 8
    h[148:156] = (b"0o%o" % sum(h)).ljust(8, b"\0")
    return tar_file(side_tables(), bytes(h) + pad(payload_pickle()))


def tar_pax_size_fullwidth():
    """The `pickle` member's size in a PAX record in full-width digits (int() reads them);
    its ustar size is 0."""
    p = payload_pickle()
    wide = "".join(chr(0xFF10 + int(c)) for c in str(len(p)))
    return tar_file(side_tables(), pax([("size", wide)]), tar_header("pickle", 0) + pad(p))


def tar_pax_size_nbsp():
    p = payload_pickle()
    return tar_file(side_tables(), pax([("size", f"{len(p)}\u00a0")]),
                    tar_header("pickle", 0) + pad(p))


def tar_duplicate_pickle():
    """Two regular members named `pickle`: tarfile takes the last (the payload)."""
    return tar_file(side_tables(), member("pickle", BENIGN), member("pickle", payload_pickle()))


def tar_type_z():
    """`pickle` with an unknown type ('Z'): tarfile reads unknown types as regular files."""
    return tar_file(side_tables(), member("pickle", BENIGN),
                    member("pickle", payload_pickle(), typ=b"Z"))


def tar_type_contiguous():
    """`pickle` with type '7' (contiguous file, a regular type to tarfile)."""
    return tar_file(side_tables(), member("pickle", BENIGN),
                    member("pickle", payload_pickle(), typ=b"7"))


def tar_hard_link():
    """`pickle` is a hard link to an earlier member `notes` holding the payload."""
    return tar_file(side_tables(), member("pickle", BENIGN), member("notes", payload_pickle()),
                    tar_header("pickle", 0, b"1", linkname=b"notes"))


def tar_symlink():
    return tar_file(side_tables(), member("pickle", BENIGN), member("notes", payload_pickle()),
                    tar_header("pickle", 0, b"2", linkname=b"notes"))


def tar_hard_link_storages():
    """`storages` a hard link to a member whose 2nd pickle is the payload."""
    return tar_file(member("notes", pint(1) + payload_pickle()), member("storages", STORAGES),
                    tar_header("storages", 0, b"1", linkname=b"notes"),
                    member("tensors", TENSORS), member("pickle", BENIGN))


def tar_gnu_sparse():
    """Old GNU sparse member (type 'S'): stored chunks [0,4) and [4+H, ...) with a hole of H
    zeros that tarfile fills in. Read raw, the stored bytes are a benign pickle; read as
    tarfile reads it, the hole is the SHORT_BINBYTES argument and the payload runs."""
    body = call_body()
    h = len(b"0" + body)
    chunk1 = proto() + b"C" + bytes([h])
    chunk2 = b"0" + body + b"."
    stored = chunk1 + chunk2
    realsize = len(chunk1) + h + len(chunk2)
    hdr = bytearray(tar_header("pickle", len(stored), b"S"))
    hdr[386:398] = octal(0, 12)
    hdr[398:410] = octal(len(chunk1), 12)
    hdr[410:422] = octal(len(chunk1) + h, 12)
    hdr[422:434] = octal(len(chunk2), 12)
    hdr[483:495] = octal(realsize, 12)
    hdr[148:156] = b" " * 8
    hdr[148:156] = b"%06o\0 " % sum(hdr)
    return tar_file(side_tables(), member("pickle", BENIGN), bytes(hdr) + pad(stored))


def tar_pax_path_trailing_slash():
    """PAX path=`pickle/` on a regular member: tarfile strips the slash (a regular file
    `pickle`), a reader taking the slash for a directory skips it."""
    return tar_file(side_tables(), member("pickle", BENIGN), pax([("path", "pickle/")]),
                    member("notes", payload_pickle()))


def tar_ustar_prefix():
    """`pickle` (payload), then a later member named `pickle` with ustar prefix `x`:
    tarfile names the later one `x/pickle`, so torch reads the payload; a reader ignoring
    the prefix takes the later, benign one."""
    return tar_file(side_tables(), member("pickle", payload_pickle()),
                    member("pickle", BENIGN, fields={"prefix": b"x"}))


def tar_storages_second_pickle():
    return tar_file(member("storages", pint(1) + payload_pickle()),
                    member("tensors", TENSORS), member("pickle", BENIGN))


def tar_storages_first_pickle():
    return tar_file(member("storages", payload_pickle() + EMPTY_LIST),
                    member("tensors", TENSORS), member("pickle", BENIGN))


def tar_storage_views_pickle():
    return tar_file(member("storages", pint(0) + payload_pickle()),
                    member("tensors", TENSORS), member("pickle", BENIGN))


def tar_tensors_second_pickle():
    return tar_file(member("storages", STORAGES), member("tensors", pint(1) + payload_pickle()),
                    member("pickle", BENIGN))


def tar_tensors_first_pickle():
    return tar_file(member("storages", STORAGES), member("tensors", payload_pickle()),
                    member("pickle", BENIGN))


def polyglot_legacy_over_bad_tar():
    """Its first 100 bytes are the payload pickle and a tar name; the header's checksum has
    an NBSP, so tarfile refuses it and torch reads the file as a legacy stream."""
    h = bytearray(tar_header(payload_pickle(), len(BENIGN)))
    h[148:156] = b" " * 8
    h[148:156] = (b"%06o" % sum(h)) + b"\xc2\xa0"
    return tar_file(bytes(h) + pad(BENIGN), side_tables(), member("pickle", BENIGN))


def polyglot_tar_over_legacy():
    """The first member's name is the legacy magic pickle (a complete legacy stream would
    follow it); tarfile reads a tar whose `pickle` is the payload."""
    name = MAGIC + PROTOCOL + BENIGN
    return tar_file(member(name, BENIGN + BENIGN + EMPTY_LIST), side_tables(),
                    member("pickle", payload_pickle()))


# ================================================================== legacy stream
def legacy_keys_pickle():
    """The storage-keys pickle, after the main one, carries the payload."""
    return MAGIC + PROTOCOL + SYS_INFO + BENIGN + payload_pickle()


def legacy_protocol_pickle():
    return MAGIC + payload_pickle() + SYS_INFO + BENIGN + EMPTY_LIST


# ================================================================== pickle
def in_zip(p):
    return plain_zip(p)


def _straddle(op, data):
    """PROTO 4, a FRAME ending 1 byte into `op`'s data (len(data) bytes, the last one `.`),
    then POP and the payload."""
    frame = op + struct.pack("<I", len(data)) + data[:1]
    return in_zip(proto(4) + _frame(frame) + data[1:] + data[-1:] + b"0" + call_body() + b".")


def pickle_binunicode_straddles_frame():
    """A FRAME ends 1 byte into a BINUNICODE's 8 bytes. For a read that does not fit in the
    frame, CPython's C unpickler drops the frame's remaining bytes and reads all 8 from after
    the frame (for BINUNICODE; BINBYTES it reads through); a frame-transparent reader takes
    the in-frame byte plus 7, then reads `.` (STOP) and stops. CPython goes on to POP and the
    payload."""
    return _straddle(b"X", b"aaaaaaa.")


def pickle_binbytes_straddles_frame():
    """The same with BINBYTES, which CPython reads through the frame's end (a control)."""
    return _straddle(b"B", b"aaaaaaa.")


def _frame(data):
    return b"\x95" + struct.pack("<Q", len(data)) + data


def pickle_memo_get_straddles_frame():
    """Text GETs `g1|2` and `g1|3` whose lines cross a FRAME's end. CPython's C unpickler
    drops the part of a text line inside the frame when it has to read the rest from the
    file (it reads memo 2 and 3: os, system); a reader that treats frames as transparent
    reads memo 12 and 13 (collections, OrderedDict)."""
    setup = b""
    for idx, text in [(2, "os"), (3, "system"), (12, "collections"), (13, "OrderedDict")]:
        setup += short(text) + b"q" + bytes([idx]) + b"0"
    body = (_frame(b"g1") + b"2\n" + _frame(b"g1") + b"3\n" + b"\x93("
            + binuni(f"touch {MARKER}") + b"tR.")
    return in_zip(proto(4) + setup + body)


def pickle_global_line_straddles_frame():
    """GLOBAL `torch._utils` / `_rebuild|os.system`: the name line crosses a FRAME's end, so
    CPython reads the name `os.system` (a dotted path from torch._utils, protocol 4) where a
    frame-transparent reader reads `_rebuildos.system`."""
    return in_zip(proto(4) + _frame(b"ctorch._utils\n_rebuild") + b"os.system\n("
                  + binuni(f"touch {MARKER}") + b"tR.")


def pickle_frame_past_end():
    """A FRAME whose length covers the whole rest of the pickle and the STOP."""
    body = call_body() + b"."
    return in_zip(proto(4) + b"\x95" + struct.pack("<Q", len(body)) + body)


def pickle_nested_frame():
    inner = call_body() + b"."
    outer = b"\x95" + struct.pack("<Q", len(inner)) + inner
    return in_zip(proto(4) + b"\x95" + struct.pack("<Q", 9) + outer)


def _int_then_payload(op):
    return in_zip(proto(2) + op + b"0" + call_body() + b".")


def pickle_int_hex():
    return _int_then_payload(b"I0x10\n")


def pickle_int_underscore():
    return _int_then_payload(b"I1_000\n")


def pickle_int_octal_text():
    return _int_then_payload(b"I010\n")


def pickle_long_hex():
    return _int_then_payload(b"L0x10L\n")


def pickle_long_underscore():
    return _int_then_payload(b"L1_0\n")


def pickle_int_spaces():
    return _int_then_payload(b"I 12 \n")


def pickle_memo_underscore_global():
    """STACK_GLOBAL's module and name come from memo GETs written `1_0`/`1_1` (10 and 11 to
    CPython); memo 1 and 0 hold a safe name."""
    memo = b""
    strings = ["OrderedDict", "collections"] + ["pad"] * 8 + ["os", "system"]
    for i, s in enumerate(strings):
        memo += short(s) + b"p" + str(i).encode() + b"\n0"
    return in_zip(proto(4) + memo + b"g1_0\ng1_1\n\x93(" + binuni(f"touch {MARKER}")
                  + b"tR.")


def pickle_memo_leading_zero_put():
    """PUT `010`: CPython reads memo index 10."""
    return in_zip(proto(2) + b"c" + b"os\nsystem\n" + b"p010\n0g10\n(" + binuni("x") + b"tR.")


def pickle_second_build():
    return in_zip(proto(2) + call_body() + b"}b}b.")


def pickle_build_on_global():
    return in_zip(proto(2) + b"ccollections\nOrderedDict\n}b0" + call_body() + b".")


def pickle_build_on_payload_global():
    return in_zip(proto(2) + b"cos\nsystem\n}b.")


def pickle_proto_midstream():
    return in_zip(proto(2) + b"\x80\x04" + call_body() + b".")


def pickle_ext1():
    """EXT1 code 0xf0: only registered copyreg extensions resolve (torch registers none)."""
    return in_zip(proto(2) + b"\x82\xf0" + b"(" + binuni("x") + b"tR.")


def pickle_global_py2_commands():
    """`commands.getoutput` is subprocess.getoutput to CPython (fix_imports, proto < 3)."""
    return in_zip(proto(2) + b"ccommands\ngetoutput\n(" + binuni("x") + b"tR.")


def pickle_inst_payload():
    return in_zip(b"(" + binuni("x") + b"ios\nsystem\n.")


def pickle_after_stop():
    """Bytes after STOP are not read by torch: a benign pickle then a payload after it is
    not an attack (a control)."""
    return in_zip(BENIGN + payload_pickle())


# ================================================================== safetensors
def safetensors_benign():
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + struct.pack("<2f", 1.0, 2.0)


# ================================================================== the catalogue
@dataclass
class Case:
    name: str
    family: str
    make: callable
    ext: str = ".pth"
    malicious: bool = True    # carries the payload global


def _cases():
    out = []
    g = globals()
    for fname, fn in list(g.items()):
        if not callable(fn) or not fname.split("_")[0] in (
                "zip", "ts", "tar", "polyglot", "legacy", "pickle", "safetensors"):
            continue
        if fname in ("zip64_record", "zip64_locator", "zip64_extra", "tar_header",
                     "tar_file", "tar_end", "ts_context", "zip_parts", "legacy_stream"):
            continue
        if fn.__code__.co_argcount:
            continue
        family = {"ts": "torchscript", "polyglot": "tar"}.get(fname.split("_")[0],
                                                              fname.split("_")[0])
        ext = ".safetensors" if fname == "safetensors_benign" else (
            ".tar" if family == "tar" else ".pth")
        malicious = fname not in ("safetensors_benign", "zip_comment_past_eof_benign")
        out.append(Case(fname, family, fn, ext, malicious))
    return out


CASES = _cases()


def write(outdir):
    """Writes every case into outdir; returns [(Case, Path)]."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    made = []
    for case in CASES:
        path = outdir / f"{case.name}{case.ext}"
        path.write_bytes(case.make())
        made.append((case, path))
    return made


VERDICTS = {0: "clean", 1: "dangerous", 2: "unreadable", 3: "unknown"}


def ckpt_bin():
    return os.environ.get("CKPT_BIN") or "/tmp/ckpt-head/ckpt"


def ckpt_scan(path, binary=None):
    proc = subprocess.run([binary or ckpt_bin(), "scan", "--json", str(path)],
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, VERDICTS.get(proc.returncode, f"exit {proc.returncode}")


def evaluate(outdir, oracle=None):
    """Writes and measures every case: [(Case, Path, oracle Result, ckpt exit)]."""
    from torch_oracle import Oracle
    rows = []
    own = oracle is None
    oracle = oracle or Oracle()
    try:
        for case, path in write(outdir):
            res = oracle.load(path)
            rows.append((case, path, res, ckpt_scan(path)[0]))
    finally:
        if own:
            oracle.close()
    return rows


def verdict_ok(case, res, code):
    """PASS rule: torch reached a name off the safe list -> ckpt exit 1 or 3; torch loaded
    a file whose names are all safe -> never 2."""
    if res.reached:
        return code in (1, 3)
    if res.completed:
        return code != 2
    return True


def markdown(rows):
    """The results as a markdown table (for the helpers fixing the readers)."""
    out = ["| case | family | torch reached payload | torch completed | ckpt exit/verdict "
           "| result | construction |", "|---|---|---|---|---|---|---|"]
    for case, path, res, code in rows:
        doc = " ".join((case.make.__doc__ or "").split())
        reached = ", ".join(sorted(set(res.reached))) or "no"
        done = "yes" if res.completed else f"no ({(res.error or '')[:60]})"
        out.append(f"| `{path.name}` | {case.family} | {reached} | {done} | {code} "
                   f"{VERDICTS.get(code, '?')} | {'PASS' if verdict_ok(case, res, code) else 'FAIL'}"
                   f" | {doc.replace('|', '/')} |")
    return "\n".join(out) + "\n"


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    args = [a for a in sys.argv[1:] if not a.startswith("--markdown=")]
    md = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--markdown=")]
    outdir = Path(args[0] if args else "evasions-out")
    rows = evaluate(outdir)
    if md:
        Path(md[0]).write_text(markdown(rows))
    for case, path, res, code in rows:
        ok = verdict_ok(case, res, code)
        print(f"{path.name:45} {case.family:12} reached={'yes' if res.reached else 'no ':3} "
              f"completed={'yes' if res.completed else 'no ':3} ckpt={code} "
              f"{VERDICTS.get(code, '?'):10} {'PASS' if ok else 'FAIL'}"
              + ("" if res.completed else f"  [{(res.error or '')[:70]}]"))
        assert not (Path.cwd() / MARKER).exists(), "a payload ran"


if __name__ == "__main__":
    main()
