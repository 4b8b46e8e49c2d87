"""A small, careful reader of ELF relocatable objects: what the loader checks before LLVM sees
the bytes (machine, symbols, relocations). Every offset and size is bounds-checked; anything
malformed raises RuntimeError_, so hostile bytes never reach LLVM's object loader.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..error import RuntimeError_

# e_machine -> the name `platform.machine()` uses for that architecture
MACHINES = {
    3: "i386",
    8: "mips",
    20: "ppc",
    21: "ppc64",
    22: "s390x",
    40: "arm",
    62: "x86_64",
    183: "aarch64",
    243: "riscv64",
    258: "loongarch64",
}
_ET_REL = 1
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_STRTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 1, 2, 3, 4, 8, 9
_SHF_EXECINSTR = 0x4
_SHN_UNDEF, _SHN_LORESERVE, _SHN_XINDEX = 0, 0xFF00, 0xFFFF
_STB_GLOBAL, _STB_WEAK = 1, 2
_HEADER, _SECTION, _SYMBOL = 64, 64, 24
_RELOC_SIZE = {_SHT_RELA: 24, _SHT_REL: 16}
_MAX_ALIGN, _MAX_NOBITS, _ADDEND_SLACK = 1 << 16, 1 << 30, 1 << 12
# x86-64 relocation type -> bytes it patches, for the types LLVM's runtime linker
# (RuntimeDyldELF) implements; another type makes it abort, so the reader refuses it first.
_X86_64_RELOCS = {
    0: 0,  # NONE
    1: 8,  # 64
    2: 4,  # PC32
    3: 4,  # GOT32
    4: 4,  # PLT32
    9: 4,  # GOTPCREL
    10: 4,  # 32
    11: 4,  # 32S
    24: 8,  # PC64
    25: 8,  # GOTOFF64
    26: 4,  # GOTPC32
    41: 4,  # GOTPCRELX
    42: 4,  # REX_GOTPCRELX
}


# a data symbol codegen may define: the canonical JSON of the object's FuncInfos
SIGNATURE_SYMBOL = "minitvm.signature"


@dataclass(frozen=True)
class ElfInfo:
    """What the loader needs to know about an object: its architecture and its symbols."""

    machine: str  # e.g. "x86_64", "aarch64" (MACHINES), or "machine <number>"
    undefined_symbols: frozenset[str]
    defined_symbols: frozenset[str]  # global and weak symbols the object defines
    signature: bytes | None = None  # the bytes of SIGNATURE_SYMBOL, when the object has it


@dataclass(frozen=True)
class _Section:
    index: int
    name_offset: int
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int


class _Reader:
    """Bounds-checked struct reads from `data` with the object's byte order."""

    def __init__(self, data: bytes, where: str, order: str) -> None:
        self.data, self.where, self.order = data, where, order

    def fail(self, what: str) -> RuntimeError_:
        return RuntimeError_(f"{self.where}: malformed ELF object: {what}")

    def unpack(self, fmt: str, offset: int, what: str) -> tuple:
        size = struct.calcsize(self.order + fmt)
        if offset < 0 or offset + size > len(self.data):
            raise self.fail(f"{what} at byte {offset} lies outside the {len(self.data)}-byte file")
        return struct.unpack_from(self.order + fmt, self.data, offset)

    def span(self, offset: int, size: int, what: str) -> None:
        if offset < 0 or size < 0 or offset + size > len(self.data):
            raise self.fail(
                f"{what} (bytes {offset}..{offset + size}) lies outside the "
                f"{len(self.data)}-byte file"
            )

    def string(self, table: _Section, offset: int, what: str) -> str:
        if offset >= table.size:
            raise self.fail(f"{what}: name offset {offset} is past its string table")
        start = table.offset + offset
        end = self.data.find(b"\0", start, table.offset + table.size)
        if end < 0:
            raise self.fail(f"{what}: name at offset {offset} is not NUL-terminated")
        try:
            return self.data[start:end].decode("utf-8")
        except UnicodeDecodeError as err:
            raise self.fail(f"{what}: name at offset {offset} is not UTF-8") from err


def read_elf(data: bytes, where: str) -> ElfInfo:
    """Parse and check a 64-bit ELF relocatable object; RuntimeError_ (mentioning `where`) on
    anything malformed. Never hands the bytes to native code."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise RuntimeError_(f"{where}: expected the bytes of an ELF object, got {type(data)}")
    data = bytes(data)
    if len(data) < 16 or data[:4] != b"\x7fELF":
        raise RuntimeError_(f"{where}: not an ELF object (the file does not start with \\x7fELF)")
    ei_class, ei_data, ei_version = data[4], data[5], data[6]
    if ei_data not in (1, 2) or ei_version != 1:
        raise RuntimeError_(f"{where}: malformed ELF object: bad identification bytes")
    reader = _Reader(data, where, "<" if ei_data == 1 else ">")
    (e_machine,) = reader.unpack("H", 18, "e_machine")
    machine = MACHINES.get(e_machine, f"machine {e_machine}")
    if ei_class != 2:
        raise RuntimeError_(
            f"{where}: a 32-bit ELF object (built for {machine}); minitvm modules are 64-bit"
        )
    sections = _sections(reader)
    for s in sections:
        if s.type != _SHT_NOBITS:
            reader.span(s.offset, s.size, f"section {s.index}")
    undefined, defined, n_symbols, data = set(), set(), {}, {}
    for s in sections:
        if s.type == _SHT_SYMTAB:
            n_symbols[s.index] = _symbols(reader, sections, s, undefined, defined, data)
    for s in sections:
        if s.type in _RELOC_SIZE:
            _check_relocations(reader, sections, s, n_symbols, machine)
    return ElfInfo(machine, frozenset(undefined), frozenset(defined), data.get(SIGNATURE_SYMBOL))


def _sections(reader: _Reader) -> list[_Section]:
    (e_type,) = reader.unpack("H", 16, "e_type")
    if e_type != _ET_REL:
        raise reader.fail(f"e_type is {e_type}, expected {_ET_REL} (a relocatable object)")
    e_shoff, _, e_ehsize, _, _, e_shentsize, e_shnum, e_shstrndx = reader.unpack(
        "QIHHHHHH", 40, "the ELF header"
    )
    if e_ehsize != _HEADER or e_shentsize != _SECTION or e_shoff == 0:
        raise reader.fail("the header's sizes or section table offset are wrong")
    first = _section(reader, e_shoff, 0)
    if e_shnum == 0:  # extended numbering: the count lives in section 0
        e_shnum = first.size
    if e_shstrndx == _SHN_XINDEX:
        e_shstrndx = first.link
    if e_shnum < 1 or e_shnum > len(reader.data) // _SECTION:
        raise reader.fail(f"section count {e_shnum} does not fit in the file")
    reader.span(e_shoff, e_shnum * _SECTION, "the section header table")
    sections = [first] + [_section(reader, e_shoff, i) for i in range(1, e_shnum)]
    for s in sections:
        if s.align & (s.align - 1) or s.align > _MAX_ALIGN:
            raise reader.fail(f"section {s.index} has alignment {s.align}")
        if s.type == _SHT_NOBITS and s.size > _MAX_NOBITS:
            raise reader.fail(f"section {s.index} asks for {s.size} bytes of zeroed memory")
    if not 0 < e_shstrndx < e_shnum or sections[e_shstrndx].type != _SHT_STRTAB:
        raise reader.fail(f"section-name table index {e_shstrndx} is not a string table")
    names = sections[e_shstrndx]
    reader.span(names.offset, names.size, "the section-name table")
    for s in sections[1:]:
        name = reader.string(names, s.name_offset, f"section {s.index}")
        code = s.flags & _SHF_EXECINSTR
        if code and (not _is_code_name(name) or s.type != _SHT_PROGBITS):
            raise reader.fail(f"section {s.index} ({name!r}) is executable but not .text")
        if _is_code_name(name) and s.type == _SHT_PROGBITS and not code:
            raise reader.fail(f"section {s.index} ({name!r}) is code that is not executable")
    return sections


def _is_code_name(name: str) -> bool:
    """.text, .text.<fn>, and .ltext(.<fn>): the large code model's code sections."""
    return any(name == base or name.startswith(base + ".") for base in (".text", ".ltext"))


def _section(reader: _Reader, e_shoff: int, index: int) -> _Section:
    fields = reader.unpack("IIQQQQIIQQ", e_shoff + index * _SECTION, f"section header {index}")
    name, type_, flags, _, offset, size, link, info, align, entsize = fields
    return _Section(index, name, type_, flags, offset, size, link, info, align, entsize)


def _symbols(reader: _Reader, sections, symtab: _Section, undefined, defined, data) -> int:
    if symtab.entsize != _SYMBOL or symtab.size % _SYMBOL:
        raise reader.fail(f"symbol table (section {symtab.index}) has a bad entry size")
    if not 0 < symtab.link < len(sections) or sections[symtab.link].type != _SHT_STRTAB:
        raise reader.fail(f"symbol table (section {symtab.index}) links to no string table")
    strtab = sections[symtab.link]
    count = symtab.size // _SYMBOL
    for k in range(1, count):  # entry 0 is the null symbol
        name_off, st_info, _, shndx, value, size = reader.unpack(
            "IBBHQQ", symtab.offset + k * _SYMBOL, f"symbol {k}"
        )
        if _SHN_UNDEF < shndx < _SHN_LORESERVE:
            if shndx >= len(sections):
                raise reader.fail(f"symbol {k} lies in section {shndx}, which does not exist")
            if value + size > sections[shndx].size:
                raise reader.fail(f"symbol {k} extends past the end of its section")
        if not name_off:
            continue
        name = reader.string(strtab, name_off, f"symbol {k}")
        if shndx == _SHN_UNDEF:
            undefined.add(name)
        elif st_info >> 4 in (_STB_GLOBAL, _STB_WEAK):
            defined.add(name)
            if name == SIGNATURE_SYMBOL:
                data[name] = _symbol_bytes(reader, sections, k, shndx, value, size)
    return count


def _symbol_bytes(reader: _Reader, sections, k: int, shndx: int, value: int, size: int) -> bytes:
    """The initialised bytes a data symbol names (bounds-checked within its section)."""
    if not 0 < shndx < len(sections) or sections[shndx].type == _SHT_NOBITS:
        raise reader.fail(f"data symbol {k} lies in no section with contents")
    section = sections[shndx]
    if value + size > section.size:
        raise reader.fail(f"data symbol {k} extends past its section")
    return reader.data[section.offset + value : section.offset + value + size]


def _check_relocations(reader: _Reader, sections, rel: _Section, n_symbols: dict, machine: str):
    size = _RELOC_SIZE[rel.type]
    if rel.entsize != size or rel.size % size:
        raise reader.fail(f"relocation section {rel.index} has a bad entry size")
    if rel.link not in n_symbols or not 0 < rel.info < len(sections):
        raise reader.fail(f"relocation section {rel.index} refers to a missing section")
    target = sections[rel.info]
    for k in range(rel.size // size):
        r_offset, r_info = reader.unpack("QQ", rel.offset + k * size, f"relocation {k}")
        if rel.type == _SHT_RELA:
            (addend,) = reader.unpack("q", rel.offset + k * size + 16, f"relocation {k}")
            if abs(addend) > len(reader.data) + _ADDEND_SLACK:  # an offset within the object
                raise reader.fail(f"relocation {k} of section {rel.index} has addend {addend}")
        symbol, kind = r_info >> 32, r_info & 0xFFFFFFFF
        if symbol >= n_symbols[rel.link]:
            raise reader.fail(f"relocation {k} of section {rel.index} names symbol {symbol}")
        width = 1
        if machine == "x86_64":
            if kind not in _X86_64_RELOCS:
                raise reader.fail(f"relocation {k} of section {rel.index} has unknown type {kind}")
            width = _X86_64_RELOCS[kind]
        if r_offset + width > target.size:
            raise reader.fail(f"relocation {k} of section {rel.index} patches outside its section")
