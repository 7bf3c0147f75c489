import { deflateSync, inflateSync } from 'node:zlib';

// Chromium writes screenshots as 24-bit PNGs, three times the bytes a page of text needs: its few
// hundred colours are mostly the grey steps of anti-aliased glyphs. Re-written with a palette of
// the 256 most used colours (a rarer one drawn as the nearest of these), a screenshot of the desk
// shrinks to about a third and looks the same.

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** The pixels of an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes), as RGB. */
function decode(png: Buffer): { width: number; height: number; rgb: Buffer } {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colour, , , interlace] = body.subarray(8);
      channels = colour === 2 ? 3 : colour === 6 ? 4 : 0;
      if (depth !== 8 || channels === 0 || interlace !== 0) throw new Error('only 8-bit RGB(A) PNGs, not interlaced');
    } else if (type === 'IDAT') data.push(body);
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const rows = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? rows[y * stride + x - channels] : 0;
      const up = y > 0 ? rows[(y - 1) * stride + x] : 0;
      const corner = x >= channels && y > 0 ? rows[(y - 1) * stride + x - channels] : 0;
      let predicted = 0;
      if (filter === 1) predicted = left;
      else if (filter === 2) predicted = up;
      else if (filter === 3) predicted = (left + up) >> 1;
      else if (filter === 4) {
        const p = left + up - corner;
        const [pa, pb, pc] = [Math.abs(p - left), Math.abs(p - up), Math.abs(p - corner)];
        predicted = pa <= pb && pa <= pc ? left : pb <= pc ? up : corner;
      }
      rows[y * stride + x] = (line[x] + predicted) & 0xff;
    }
  }
  const rgb = Buffer.alloc(width * height * 3);
  for (let i = 0; i < width * height; i++) rows.copy(rgb, i * 3, i * channels, i * channels + 3);
  return { width, height, rgb };
}

/** `png` (a screenshot) as an 8-bit palette PNG of its 256 most used colours. */
export function toPalettePng(png: Buffer): Buffer {
  const { width, height, rgb } = decode(png);
  const uses = new Map<number, number>();
  for (let i = 0; i < rgb.length; i += 3) {
    const colour = rgb.readUIntBE(i, 3);
    uses.set(colour, (uses.get(colour) ?? 0) + 1);
  }
  const palette = [...uses]
    .sort((a, b) => b[1] - a[1] || a[0] - b[0])
    .slice(0, 256)
    .map(([colour]) => colour);
  const index = new Map<number, number>();
  const channelsOf = (c: number) => [c >> 16, (c >> 8) & 0xff, c & 0xff];
  for (const colour of uses.keys()) {
    const [r, g, b] = channelsOf(colour);
    let best = 0;
    let bestDistance = Infinity;
    palette.forEach((p, i) => {
      const [pr, pg, pb] = channelsOf(p);
      const distance = (r - pr) ** 2 + (g - pg) ** 2 + (b - pb) ** 2;
      if (distance < bestDistance) [best, bestDistance] = [i, distance];
    });
    index.set(colour, best);
  }
  // Each row filtered by "up" (2): rows of text repeat the row above more than they differ.
  const raw = Buffer.alloc((width + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width + 1)] = 2;
    for (let x = 0; x < width; x++) {
      const here = index.get(rgb.readUIntBE((y * width + x) * 3, 3))!;
      const above = y > 0 ? index.get(rgb.readUIntBE(((y - 1) * width + x) * 3, 3))! : 0;
      raw[y * (width + 1) + 1 + x] = (here - above) & 0xff;
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 3, 0, 0, 0], 8);
  const plte = Buffer.from(palette.flatMap(channelsOf));
  return Buffer.concat([
    SIGNATURE,
    chunk('IHDR', header),
    chunk('PLTE', plte),
    chunk('IDAT', deflateSync(raw, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
