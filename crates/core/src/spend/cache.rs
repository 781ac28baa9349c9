//! The cost cache's bytes (`<data_dir>/cost-cache.bin`, written by `mimesis-watch`): what
//! each transcript file contributed ([`FileUsage`]), keyed by the file's path, size,
//! modification time, device and inode, so a report reads only the files that changed.
//!
//! Pure: bytes in, bytes out. A little-endian binary with a magic, a version and a
//! checksum of everything before it; anything that does not check (another version, a
//! torn or corrupt file) decodes to `None` and the caller reads the files as if there
//! were no cache. No serialization crate is in the dependency tree (no bincode, postcard
//! or rmp): this format is a few fixed-width fields per entry, read with bounds checks.
//!
//! Layout: `MAGIC`, `VERSION` (u32), the number of files (u32), then per file its
//! [`FileKey`] and its body (the usage, `encode_body`), then the checksum (u64) of all
//! that precedes it.

use super::read::{FileUsage, Skipped, UsageEntry};
use crate::clock::Timestamp;
use crate::pricing::RequestTokens;

const MAGIC: &[u8; 8] = b"MIMCOST\0";
/// Bumped whenever the layout or what [`FileUsage`] keeps of a file changes.
pub const VERSION: u32 = 1;

/// What says a file is the one its entry was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileKey {
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    pub dev: u64,
    pub ino: u64,
    /// How far the file was read: the end of its last complete line.
    pub read_to: u64,
    /// [`checksum`] of the (at most [`TAIL_CHECK`]) bytes before `read_to`: a file that
    /// only grew still has them, and only its new bytes need reading.
    pub tail_hash: u64,
}

/// How many bytes before the end of what was read are checked before reading only what a
/// file gained.
pub const TAIL_CHECK: u64 = 4096;

/// One file's entry as found in a cache: its key, and its body still encoded (decoded
/// only when used, copied as is when written back).
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub path: &'a [u8],
    pub key: FileKey,
    pub body: &'a [u8],
}

/// A cache being written: [`Writer::push`] each file, then [`Writer::finish`].
pub struct Writer {
    buf: Vec<u8>,
    count: u32,
}

impl Default for Writer {
    fn default() -> Self {
        let mut buf = Vec::with_capacity(1 << 20);
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&VERSION.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        Writer { buf, count: 0 }
    }
}

impl Writer {
    /// Adds a file read now.
    pub fn push(&mut self, path: &[u8], key: &FileKey, usage: &FileUsage) {
        self.head(path, key);
        let at = self.buf.len();
        self.buf.extend_from_slice(&0u32.to_le_bytes());
        encode_body(&mut self.buf, usage);
        let len = (self.buf.len() - at - 4) as u32;
        self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// Adds a file whose entry is unchanged, its body copied.
    pub fn push_encoded(&mut self, path: &[u8], key: &FileKey, body: &[u8]) {
        self.head(path, key);
        self.buf.extend_from_slice(&(body.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(body);
    }

    fn head(&mut self, path: &[u8], key: &FileKey) {
        self.count += 1;
        let b = &mut self.buf;
        put_bytes(b, path);
        for v in [key.size, key.mtime_ns as u64, key.dev, key.ino, key.read_to, key.tail_hash] {
            b.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// The cache's bytes.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf[12..16].copy_from_slice(&self.count.to_le_bytes());
        let sum = checksum(&self.buf);
        self.buf.extend_from_slice(&sum.to_le_bytes());
        self.buf
    }
}

/// The entries of a cache, or `None` when the bytes are not a whole cache of this version.
pub fn entries(bytes: &[u8]) -> Option<Vec<Entry<'_>>> {
    let (data, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
    if checksum(data) != u64::from_le_bytes(sum.try_into().ok()?) {
        return None;
    }
    let mut c = Cursor(data);
    if c.take(8)? != MAGIC || c.u32()? != VERSION {
        return None;
    }
    let count = c.u32()? as usize;
    // Each entry takes at least 60 bytes: a hostile count allocates nothing.
    let mut out = Vec::with_capacity(count.min(c.0.len() / 60));
    for _ in 0..count {
        let path = c.bytes()?;
        let key = FileKey {
            size: c.u64()?,
            mtime_ns: c.u64()? as i64,
            dev: c.u64()?,
            ino: c.u64()?,
            read_to: c.u64()?,
            tail_hash: c.u64()?,
        };
        let body = c.bytes()?;
        out.push(Entry { path, key, body });
    }
    c.0.is_empty().then_some(out)
}

/// A file's usage from its entry's body; `session`, `project_dir` and `order` are the
/// file's now (they come from where it is, not from the cache).
pub fn decode_body(body: &[u8], session: String, project_dir: String, order: u32) -> Option<FileUsage> {
    let mut c = Cursor(body);
    let cwd = match c.u32()? {
        u32::MAX => None,
        n => Some(std::str::from_utf8(c.take(n as usize)?).ok()?.to_owned()),
    };
    let billed_usd = match c.u8()? {
        0 => None,
        _ => Some(f64::from_bits(c.u64()?)),
    };
    let skipped = Skipped {
        invalid_tokens: c.u64()?,
        no_time: c.u64()?,
        invalid_record: c.u64()?,
        unreadable_lines: c.u64()?,
        unreadable_files: c.u64()?,
    };
    let seen = c.u32()?;
    let n = c.u32()? as usize;
    let mut models = Vec::with_capacity(n.min(c.0.len() / 4));
    for _ in 0..n {
        models.push(std::str::from_utf8(c.bytes()?).ok()?.to_owned());
    }
    let n = c.u32()? as usize;
    if n.checked_mul(ENTRY)? != c.0.len() {
        return None;
    }
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let at = Timestamp::from_millis(c.u64()? as i64);
        let flags = c.u8()?;
        let (message, request) = (c.u64()?, c.u64()?);
        let model = c.u32()?;
        let tokens = RequestTokens {
            input: c.u64()?,
            output: c.u64()?,
            cache_write_5m: c.u64()?,
            cache_write_1h: c.u64()?,
            cache_read: c.u64()?,
        };
        let seq = c.u32()?;
        entries.push(UsageEntry {
            at,
            message: (flags & 1 != 0).then_some(message),
            request: (flags & 2 != 0).then_some(request),
            model,
            tokens,
            sidechain: flags & 4 != 0,
            fast: flags & 8 != 0,
            seq,
        });
    }
    let mut u = FileUsage::new(session, project_dir);
    u.order = order;
    u.cwd = cwd;
    u.models = models;
    u.entries = entries;
    u.billed_usd = billed_usd;
    u.skipped = skipped;
    u.set_seen(seen);
    Some(u)
}

/// The bytes of one encoded [`UsageEntry`].
const ENTRY: usize = 8 + 1 + 8 + 8 + 4 + 5 * 8 + 4;

fn encode_body(b: &mut Vec<u8>, u: &FileUsage) {
    match &u.cwd {
        None => b.extend_from_slice(&u32::MAX.to_le_bytes()),
        Some(c) => put_bytes(b, c.as_bytes()),
    }
    match u.billed_usd {
        None => b.push(0),
        Some(v) => {
            b.push(1);
            b.extend_from_slice(&v.to_bits().to_le_bytes());
        }
    }
    let s = &u.skipped;
    for v in [s.invalid_tokens, s.no_time, s.invalid_record, s.unreadable_lines, s.unreadable_files] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&u.seen().to_le_bytes());
    b.extend_from_slice(&(u.models.len() as u32).to_le_bytes());
    for m in &u.models {
        put_bytes(b, m.as_bytes());
    }
    b.extend_from_slice(&(u.entries.len() as u32).to_le_bytes());
    b.reserve(u.entries.len() * ENTRY);
    for e in &u.entries {
        let flags = u8::from(e.message.is_some())
            | u8::from(e.request.is_some()) << 1
            | u8::from(e.sidechain) << 2
            | u8::from(e.fast) << 3;
        b.extend_from_slice(&(e.at.millis() as u64).to_le_bytes());
        b.push(flags);
        b.extend_from_slice(&e.message.unwrap_or(0).to_le_bytes());
        b.extend_from_slice(&e.request.unwrap_or(0).to_le_bytes());
        b.extend_from_slice(&e.model.to_le_bytes());
        let t = &e.tokens;
        for v in [t.input, t.output, t.cache_write_5m, t.cache_write_1h, t.cache_read] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&e.seq.to_le_bytes());
    }
}

fn put_bytes(b: &mut Vec<u8>, s: &[u8]) {
    b.extend_from_slice(&(s.len() as u32).to_le_bytes());
    b.extend_from_slice(s);
}

/// A 64-bit checksum, eight bytes a step (a corrupt or torn cache is caught, not an
/// attacker: the cache is the user's own file).
pub fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = bytes.len() as u64 ^ K;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
    h ^ (h >> 32)
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage() -> FileUsage {
        let mut u = FileUsage::new("s", "-p");
        u.cwd = Some("/home/me/p".into());
        u.models = vec!["claude-haiku-4-5".into(), "claude-opus-4-1".into()];
        u.billed_usd = Some(1.25);
        u.skipped.no_time = 3;
        u.set_seen(7);
        let e = UsageEntry {
            at: Timestamp::from_millis(1_764_000_000_123),
            message: Some(42),
            request: None,
            model: 1,
            tokens: RequestTokens { input: 1, output: 2, cache_write_5m: 3, cache_write_1h: 4, cache_read: 5 },
            sidechain: true,
            fast: false,
            seq: 6,
        };
        u.entries = vec![e, UsageEntry { model: crate::spend::read::SYNTHETIC, fast: true, sidechain: false, ..e }];
        u
    }

    #[test]
    fn a_cache_round_trips_and_a_damaged_one_is_none() {
        let key = FileKey { size: 10, mtime_ns: -5, dev: 1, ino: 2, read_to: 9, tail_hash: 77 };
        let u = usage();
        let mut w = Writer::default();
        w.push(b"/a.jsonl", &key, &u);
        w.push(b"/b.jsonl", &FileKey::default(), &FileUsage::new("x", "y"));
        let bytes = w.finish();
        let e = entries(&bytes).unwrap();
        assert_eq!((e.len(), e[0].path, e[0].key, e[1].path), (2, &b"/a.jsonl"[..], key, &b"/b.jsonl"[..]));
        let back = decode_body(e[0].body, "s2".into(), "-q".into(), 9).unwrap();
        assert_eq!((back.session.as_str(), back.project_dir.as_str(), back.order), ("s2", "-q", 9));
        assert_eq!(
            (&back.cwd, &back.models, &back.entries, back.billed_usd),
            (&u.cwd, &u.models, &u.entries, u.billed_usd)
        );
        assert_eq!((back.skipped, back.seen()), (u.skipped, 7));
        // Copied as is, the same bytes.
        let mut w = Writer::default();
        w.push_encoded(e[0].path, &e[0].key, e[0].body);
        w.push_encoded(e[1].path, &e[1].key, e[1].body);
        assert_eq!(w.finish(), bytes);

        for cut in [0, 1, 8, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(entries(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        for i in [0, 9, 30, bytes.len() / 2, bytes.len() - 3] {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(entries(&bad).is_none(), "byte {i} flipped");
        }
        // Another version, with a checksum that holds.
        let mut other = bytes[..bytes.len() - 8].to_vec();
        other[8..12].copy_from_slice(&(VERSION + 1).to_le_bytes());
        let sum = checksum(&other);
        other.extend_from_slice(&sum.to_le_bytes());
        assert!(entries(&other).is_none());
        // A body that lies about its entries.
        assert!(decode_body(&e[0].body[..e[0].body.len() - 1], "s".into(), "p".into(), 0).is_none());
    }
}
