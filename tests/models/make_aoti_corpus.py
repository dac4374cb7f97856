"""Writes the replay corpus of crafted AOTInductor packages (aoti_corpus/):
files that libtorch's package loader must never see, or that must fail
cleanly. Each is refused by ctorch with a status (tests/models/test_aoti.c
loads every one; aoti_check_replay runs ctorch's package check over them on
every build, sanitizers included). Needs no torch:

    python3 make_aoti_corpus.py [OUTDIR]   (default: aoti_corpus next to this file)

Truncated and bit-flipped copies of a real package are made at test time from
the package the test compiles (their bytes depend on the PyTorch version)."""
import io
import os
import struct
import sys
import zipfile

M = "pkg/data/aotinductor/model/"
META = b'{"AOTI_DEVICE_KEY": "cpu"}'


def elf_header(ei_class=2, ei_data=1, e_type=3, e_machine=62):
    """A 64-byte ELF header and nothing else: passes ctorch's identification
    check when the fields are right, and dlopen then fails on it."""
    h = bytearray(64)
    h[0:4] = b"\x7fELF"
    h[4], h[5], h[6] = ei_class, ei_data, 1
    struct.pack_into("<HHI", h, 16, e_type, e_machine, 1)
    return bytes(h)


def zipped(entries, method=zipfile.ZIP_STORED):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", method) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, data)
    return b.getvalue()


def package(so=elf_header(), extra=(), meta=True):
    e = [(M + "w.wrapper.cpp", b"// source"), (M + "w.wrapper.so", so)]
    if meta:
        e.append((M + "w.wrapper_metadata.json", META))
    e += list(extra)
    e += [("pkg/archive_format", b"pt2"), ("pkg/.data/version", b"1")]
    return zipped(e)


def patched(data, old, new):
    assert old in data, old
    return data.replace(old, new, 1)


def corpus():
    c = {}
    c["empty"] = b""
    c["text"] = b"not a zip file\n" * 4
    c["eocd_only"] = b"PK\x05\x06" + bytes(18)
    c["no_files"] = zipped([])
    c["one_entry"] = zipped([(M + "w.wrapper.so", elf_header())])
    c["no_model_dir"] = zipped([("pkg/a", b"1"), ("pkg/b", b"2")])
    c["other_model_only"] = zipped([("pkg/data/aotinductor/other/w.wrapper.so", elf_header()),
                                    ("pkg/data/aotinductor/other/w.wrapper_metadata.json", META)])
    # an entry that would be written outside the loader's temporary directory
    c["slip_dotdot"] = package(extra=[(M + "../../../../../../tmp/ctorch-aoti-slip", b"escaped")])
    c["slip_const"] = package(extra=[("pkg/data/constants/../../../../../tmp/ctorch-aoti-slip", b"escaped")])
    c["slip_dot"] = package(extra=[(M + "./w.extra", b"x")])
    c["double_slash"] = package(extra=[(M + "sub//w.extra", b"x")])
    c["backslash"] = package(extra=[(M + "..\\..\\w.extra", b"x")])
    c["directory_entry"] = package(extra=[(M + "sub/", b"")])
    # sources only: the loader would run a compiler command read from the package
    flags = b'{"compiler": "touch /tmp/ctorch-aoti-ran; true", "compile_only": true}'
    c["cpp_only"] = zipped([(M + "w.wrapper.cpp", b"int x;"), (M + "w.wrapper_compile_flags.json", flags),
                            (M + "w.wrapper_metadata.json", META), ("pkg/.data/version", b"1")])
    c["two_libraries"] = package(extra=[(M + "v.wrapper.so", elf_header())])
    c["missing_metadata"] = package(meta=False)
    c["not_elf"] = package(so=b"#!/bin/sh\necho not a library\n")
    c["elf32"] = package(so=elf_header(ei_class=1))
    c["elf_big_endian"] = package(so=elf_header(ei_data=2))
    c["elf_executable"] = package(so=elf_header(e_type=2))
    c["elf_other_machine"] = package(so=elf_header(e_machine=0xB7 if os.uname().machine != "aarch64" else 62))
    c["elf_truncated_library"] = package()  # passes the check; dlopen refuses it
    c["duplicate_names_case"] = package(extra=[(M + "W.WRAPPER.SO", elf_header())])
    c["const_shadows_file"] = package(extra=[("pkg/data/constants/w.wrapper.so", elf_header())])
    good = package()
    c["bad_crc"] = patched(good, b"// source", b"// sourcE")
    c["bad_crc_library"] = patched(good, b"\x7fELF\x02\x01\x01", b"\x7fELF\x02\x01\x02")
    cd = good.index(b"PK\x01\x02")  # the first directory entry: the source file
    c["encrypted_flag"] = good[:cd + 8] + b"\x01\x00" + good[cd + 10:]
    c["method_bzip2"] = good[:cd + 10] + b"\x0c\x00" + good[cd + 12:]
    c["deflated_corrupt"] = patched(zipped([(M + "w.wrapper.so", elf_header() + bytes(4000)),
                                            (M + "w.wrapper_metadata.json", META)], zipfile.ZIP_DEFLATED),
                                    b"PK\x03\x04", b"PK\x03\x04")[:-200] + bytes(200)
    lf = good.index(b"PK\x03\x04", 1)
    c["local_header_gone"] = good[:lf] + b"XX" + good[lf + 2:]
    c["offset_past_end"] = good[:cd + 42] + b"\xff\xff\xff\x7f" + good[cd + 46:]
    c["size_past_end"] = good[:cd + 20] + b"\xff\xff\xff\x7f\xff\xff\xff\x7f" + good[cd + 28:]
    eocd = good.rindex(b"PK\x05\x06")
    c["count_too_big"] = good[:eocd + 8] + b"\xff\xff\xff\xff" + good[eocd + 12:]
    c["directory_past_end"] = good[:eocd + 16] + b"\xff\xff\xff\x7f" + good[eocd + 20:]
    # zipfile cuts names at a NUL: write a placeholder byte, then patch it (local and central header)
    c["nul_in_name"] = package(extra=[(M + "w.wrapper.so@.txt", b"x")]).replace(b".so@.txt", b".so\x00.txt")
    return c


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "aoti_corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(corpus().items()):
        with open(os.path.join(out, name + ".pt2"), "wb") as f:
            f.write(data)
    print(f"wrote {len(corpus())} files to {out}")


main()
