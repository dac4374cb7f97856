"""A PNG writer in pure Python (zlib + struct), so that the tests make every
PNG layout libpng reads: colour types 0/2/3/4/6, bit depths 1/2/4/8/16,
Adam7 interlacing, a tRNS chunk. Pillow cannot write most of these.
Shared by tests/image/image_vs_torchvision.py and fuzz/make_seeds.py."""
import struct
import zlib

CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
# Adam7 passes: (x0, y0, dx, dy).
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def _row_bytes(samples, depth):
    """One scanline's samples (ints) packed at depth bits, big endian."""
    if depth == 16:
        return b"".join(struct.pack(">H", v) for v in samples)
    if depth == 8:
        return bytes(samples)
    out, acc, nbits = bytearray(), 0, 0
    for v in samples:
        acc = (acc << depth) | v
        nbits += depth
        if nbits == 8:
            out.append(acc)
            acc, nbits = 0, 0
    if nbits:
        out.append(acc << (8 - nbits))
    return bytes(out)


def encode(pixels, width, height, color, depth, interlace=False, palette=None, trns=None):
    """pixels: rows of width pixels, each a tuple of CHANNELS[color] ints
    (palette indices for colour type 3). palette: list of (r, g, b).
    trns: bytes of the tRNS chunk (already encoded)."""
    ch = CHANNELS[color]

    def scan(xs, ys):
        raw = bytearray()
        for y in ys:
            samples = [s for x in xs for s in pixels[y][x][:ch]]
            raw += b"\x00" + _row_bytes(samples, depth)
        return bytes(raw)

    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            xs, ys = range(x0, width, dx), range(y0, height, dy)
            if len(xs) and len(ys):
                raw += scan(xs, ys)
    else:
        raw = scan(range(width), range(height))
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0,
                                                           1 if interlace else 0))
    if palette is not None:
        out += chunk(b"PLTE", b"".join(bytes(p) for p in palette))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    return out + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
