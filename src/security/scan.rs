//! Finding every pickle in a file and every global each one names.
//!
//! The scanner mirrors what `torch.load` and `torch.jit.load` would unpickle, and more:
//!
//! * zip (`PK\x03\x04` first, as torch requires): every record whose name ends in `.pkl`
//!   (`data.pkl` under any folder or name, TorchScript `constants.pkl`, …), every other record
//!   whose first bytes are a pickle (`\x80` protocol 2–5: a renamed `data.pkl`, `.debug_pkl`,
//!   `.pt2` pickled constants) or a nested archive (a zip, or a legacy stream, recursed into up
//!   to [`MAX_NESTING`] levels). The central directory is the one torch's reader (miniz)
//!   finds, in the layout writers produce ([`zip_dir::read_directory`]); any other layout is
//!   an evasion, as is a local header that disagrees with the central directory. The
//!   archive's pickles are judged as TorchScript exactly when `torch.load` would hand it to
//!   `torch.jit.load` (a `constants.pkl` record directly in the archive folder);
//! * tar (a first block `tarfile` may take for a header): the one tar reader ([`tar::walk`])
//!   accepts exactly the layout torch's writer produced and walks it as torch does: every
//!   pickle of `storages` and `tensors` (counts, per-record headers, the view list, stepping
//!   over the raw bytes between them), `pickle`, and `sys_info` (which torch skips). Any other
//!   layout, or a side-table value torch never writes, is ambiguous (an evasion); and since
//!   torch reads a legacy stream from byte 0 whenever `tarfile` fails, the pickle there is
//!   read too when the container is refused;
//! * anything else is read as torch's legacy loader reads it: one pickle, and when it is the
//!   legacy magic number, or any value computed by a global (which could equal it), the four
//!   that follow.
//!
//! Pickles are read by the non-executing reader in its lenient mode: the globals named
//! before a pickle breaks are still reported (Python would already have imported them), and
//! so are globals that were popped off the stack and never reached the root. The scan never
//! fails as a whole: what it cannot read becomes an [`Issue`].

use std::fs::File;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use flate2::read::DeflateDecoder;

use ckpt_formats::torch::checkpoint::MAX_PICKLE_BYTES;
use ckpt_formats::torch::legacy::MAGIC_PICKLE;
use ckpt_formats::torch::tar;
use ckpt_formats::torch::zip_dir;
use ckpt_formats::torch::zip_read::{self, ZipError, MAX_INFLATE_RATIO, RATIO_FLOOR};
use ckpt_import::pt2;
use ckpt_pickle::{self as pickle, Global, Limits, PickleError};

use super::classify::{classify, dotted, AllowList, Class, Context, Verdict};
use super::source::{read_at, read_up_to, ReadSeek, Window};

/// How deep archives inside archives are followed. torch's own nesting (`.pt2` sample
/// inputs, pickled tensor subclasses) is one level.
pub const MAX_NESTING: usize = 3;
/// The most bytes one scan inflates in total, across all nested records.
pub const MAX_INFLATED_TOTAL: u64 = 4 << 30;
/// The most pickles one scan reads (every zip record could be one).
pub const MAX_PICKLES: usize = 100_000;
/// A record that is not named `.pkl` is first decoded from this many bytes.
const SNIFF_WINDOW: u64 = 64 << 10;
/// How many bytes decide the container (a tar header block).
const HEAD: u64 = 512;

/// One distinct global named by a pickle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalUse {
    /// As written in the pickle.
    pub global: Global,
    /// Full dotted path after Python 2 names are mapped: what is compared.
    pub path: String,
    /// Its class and why.
    pub verdict: Verdict,
    /// How many times the pickle names it.
    pub count: usize,
}

/// How a pickle was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Found {
    /// A zip record named `*.pkl`, the first pickle of a file, a pickle of a tar
    /// checkpoint's members, or one of a legacy stream's pickles: one that torch reads.
    Expected,
    /// A record under another name whose bytes decode as a pickle, or a pickle torch skips
    /// (a tar checkpoint's `sys_info`).
    Sniffed,
}

/// One pickle and the globals it names, in order of first appearance.
#[derive(Clone, Debug)]
pub struct PickleScan {
    /// Where it is: `archive/data.pkl`, `outer.pt!archive/data.pkl` for a nested archive,
    /// `stream#1` for the first pickle of a legacy stream, `tar:pickle`, `tar:storages#2`.
    pub location: String,
    /// Whether torch reads it, or it was found by sniffing.
    pub found: Found,
    /// The globals it names, in order of first appearance.
    pub globals: Vec<GlobalUse>,
    /// Why the reader stopped before `STOP`, if it did. Globals before that point are listed.
    pub error: Option<String>,
}

/// What an issue means for the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Part of the file could not be read, so it could not be checked.
    Unreadable,
    /// The file is built to show scanners something other than what torch loads (a zip
    /// layout readers could read differently, a local header that disagrees with the central
    /// directory). Counts as dangerous.
    Evasion,
}

/// A problem with the container rather than with a global.
#[derive(Clone, Debug)]
pub struct Issue {
    /// Where in the file, spelled as [`PickleScan::location`].
    pub location: String,
    /// What it means for the verdict.
    pub severity: Severity,
    /// One line for a person.
    pub message: String,
}

/// The outcome for one file. Exit codes: `Clean` 0, `Dangerous` 1, `Unreadable` 2,
/// `Unknown` 3.
///
/// Ordered for summing up several files: `Clean < Unknown < Dangerous < Unreadable`, so a
/// file that could not be checked is never hidden behind one that was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Every pickle was read and every global in it is safe.
    Clean,
    /// Every pickle was read, none is dangerous, and some global is on no allow-list.
    Unknown,
    /// A dangerous global or an evasion was found; this is certain even if other parts of the
    /// file could not be read.
    Dangerous,
    /// Something could not be read and nothing dangerous was found in the rest.
    Unreadable,
}

impl Status {
    /// The `ckpt scan` exit status: clean 0, dangerous 1, unreadable 2, unknown 3.
    pub fn exit_code(self) -> u8 {
        match self {
            Status::Clean => 0,
            Status::Dangerous => 1,
            Status::Unreadable => 2,
            Status::Unknown => 3,
        }
    }

    /// `clean`, `unknown`, `dangerous` or `unreadable`, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Clean => "clean",
            Status::Unknown => "unknown",
            Status::Dangerous => "dangerous",
            Status::Unreadable => "unreadable",
        }
    }
}

/// Everything found in one file.
#[derive(Clone, Debug)]
pub struct FileScan {
    /// The file scanned.
    pub path: PathBuf,
    /// `zip`, `torchscript`, `pt2`, `tar`, `legacy`, `pickle`, `safetensors`, or `unknown`.
    pub format: &'static str,
    /// Every pickle found, in file order.
    pub pickles: Vec<PickleScan>,
    /// Problems with the container.
    pub issues: Vec<Issue>,
}

impl FileScan {
    /// Dangerous beats unreadable beats unknown beats clean.
    pub fn status(&self) -> Status {
        let dangerous = self.worst_class() == Some(Class::Dangerous)
            || self.issues.iter().any(|i| i.severity == Severity::Evasion);
        if dangerous {
            Status::Dangerous
        } else if !self.issues.is_empty() {
            Status::Unreadable
        } else if self.worst_class() == Some(Class::Unknown) {
            Status::Unknown
        } else {
            Status::Clean
        }
    }

    /// The worst class of any global, `None` when no pickle names one.
    pub fn worst_class(&self) -> Option<Class> {
        self.uses().map(|u| u.verdict.class).max()
    }

    /// Every global use, pickle by pickle.
    pub fn uses(&self) -> impl Iterator<Item = &GlobalUse> {
        self.pickles.iter().flat_map(|p| p.globals.iter())
    }

    /// The distinct dotted paths of class `class`, sorted.
    pub fn paths_of(&self, class: Class) -> Vec<String> {
        let mut paths: Vec<String> = self
            .uses()
            .filter(|u| u.verdict.class == class)
            .map(|u| u.path.clone())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }
}

/// Opens and scans `path` (`ckpt scan`). Never fails: an unopenable file is a scan with an
/// [`Issue`]. A command that goes on to read the file uses [`scan_open`] on the file it keeps
/// instead.
///
/// ```
/// use ckpt::security::{render, AllowList, Status};
///
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
/// let scan = ckpt::scan_file(&fixtures.join("unsafe_module.pth"), &AllowList::default());
/// assert_eq!(scan.status(), Status::Unknown);
/// assert_eq!(scan.status().exit_code(), 3);
/// print!("{}", render::to_text(&scan));
///
/// // Trusting a module for one run, as `ckpt scan --allow`:
/// let mut allowed = AllowList::default();
/// allowed.add("torch.nn.*")?;
/// let scan = ckpt::scan_file(&fixtures.join("unsafe_module.pth"), &allowed);
/// # let _ = scan;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn scan_file(path: &Path, allowed: &AllowList) -> FileScan {
    match File::open(path) {
        Ok(file) => scan_open(path, &file, allowed),
        Err(e) => FileScan {
            path: path.to_owned(),
            format: "unknown",
            pickles: Vec::new(),
            issues: vec![unreadable("", format!("cannot read the file: {e}"))],
        },
    }
}

/// Scans the already open `file` (named `path` in the report), reading it by offset and
/// never by name, so a caller that goes on to read `file` reads the bytes judged here.
pub fn scan_open(path: &Path, file: &File, allowed: &AllowList) -> FileScan {
    let scan = FileScan {
        path: path.to_owned(),
        format: "unknown",
        pickles: Vec::new(),
        issues: Vec::new(),
    };
    let mut scanner = Scanner {
        scan,
        inflated: 0,
        allowed,
    };
    match file.metadata() {
        Ok(meta) => scanner.top_level(file, meta.len()),
        Err(e) => scanner.issue(unreadable("", format!("cannot read the file: {e}"))),
    }
    scanner.scan
}

/// Scans one stored item of a DCP folder: the `torch.save` zip at `[offset, offset + len)`
/// of the open `file` (named `path` in the report, each location prefixed by `location`).
/// The caller has checked the range lies inside the file.
pub fn scan_zip_at(
    path: &Path,
    file: &File,
    offset: u64,
    len: u64,
    location: &str,
    allowed: &AllowList,
) -> FileScan {
    let mut scanner = Scanner {
        scan: FileScan {
            path: path.to_owned(),
            format: "zip",
            pickles: Vec::new(),
            issues: Vec::new(),
        },
        inflated: 0,
        allowed,
    };
    let mut reader = file;
    let mut window = Window::new(&mut reader, offset, len);
    scanner.zip(&mut window, len, location, 1);
    scanner.scan
}

struct Scanner<'a> {
    scan: FileScan,
    /// Bytes inflated so far, against [`MAX_INFLATED_TOTAL`].
    inflated: u64,
    /// Names the user declared safe for this run.
    allowed: &'a AllowList,
}

fn unreadable(location: &str, message: String) -> Issue {
    Issue {
        location: location.to_owned(),
        severity: Severity::Unreadable,
        message,
    }
}

impl Scanner<'_> {
    fn top_level(&mut self, file: &File, len: u64) {
        let mut reader = file;
        let head = match read_at(&mut reader, 0, len.min(HEAD)) {
            Ok(h) => h,
            Err(e) => {
                self.issue(unreadable("", format!("cannot read the file: {e}")));
                return;
            }
        };
        if head.is_empty() {
            self.issue(unreadable("", "the file is empty".into()));
        } else if head.starts_with(b"PK\x03\x04") {
            self.scan.format = "zip";
            self.zip(&mut reader, len, "", 0);
        } else if tar::is_tar(&head) {
            self.scan.format = "tar";
            self.tar(file, len);
        } else {
            // torch.load reads a path ending in `.safetensors` with the safetensors library,
            // and any other file, or an open file object, from byte 0 as a legacy stream: a
            // valid safetensors file's first bytes are still read as a pickle, as sniffed
            // bytes are (every global they name is reported; a failure is no issue, since
            // torch fails there too, having run nothing).
            let safetensors = is_safetensors(&mut reader, len);
            let (format, first) = if safetensors {
                ("safetensors", Found::Sniffed)
            } else {
                ("pickle", Found::Expected)
            };
            self.scan.format = format;
            let found = self.stream(&mut reader, len, "", Context::Checkpoint, first);
            if found == StreamKind::Legacy {
                self.scan.format = "legacy";
            }
        }
    }

    fn issue(&mut self, issue: Issue) {
        self.scan.issues.push(issue);
    }

    // ----------------------------------------------------------------------------- zip

    /// Scans a zip archive in `r` (`len` bytes); `outer` prefixes locations of nested ones.
    fn zip(&mut self, r: &mut dyn ReadSeek, len: u64, outer: &str, depth: usize) {
        let (entries, torchscript) = match list_entries(r, len) {
            Ok(listed) => listed,
            Err(e @ ZipError::Ambiguous(_)) => {
                self.issue(Issue {
                    location: outer.to_owned(),
                    severity: Severity::Evasion,
                    message: e.to_string(),
                });
                return;
            }
            Err(e) => {
                self.issue(unreadable(
                    outer,
                    format!("cannot read the zip directory: {e}"),
                ));
                return;
            }
        };
        let context = if torchscript {
            Context::TorchScript
        } else {
            Context::Checkpoint
        };
        if depth == 0 {
            let root = |name: &str| entries.iter().any(|e| e.name == name);
            let flat_pt2 = root(pt2::flat::VERSION) && root(pt2::flat::PROGRAM);
            self.scan.format =
                if flat_pt2 || entries.iter().any(|e| e.name.ends_with("/archive_format")) {
                    "pt2"
                } else if context == Context::TorchScript {
                    "torchscript"
                } else {
                    "zip"
                };
        }
        for entry in &entries {
            let location = format!("{outer}{}", entry.name);
            let local = match zip_read::read_local_header(r, entry.header_offset, len) {
                Ok(local) => local,
                Err(reason) => {
                    // The directory itself is sound (miniz accepted it), so this is no
                    // truncation: torch reads the record only if it asks for it by name, and
                    // no writer makes a local header it cannot read. Ambiguous.
                    self.issue(Issue {
                        location: location.clone(),
                        severity: Severity::Evasion,
                        message: format!(
                            "{reason}, under an intact central directory (no zip writer makes this; torch reads the record only through the directory)"
                        ),
                    });
                    continue;
                }
            };
            if let Some(detail) =
                zip_read::local_mismatch(&local, &entry.name_raw, entry.size, entry.compressed_size)
            {
                self.issue(Issue {
                    location: location.clone(),
                    severity: Severity::Evasion,
                    message: format!(
                        "{detail}: local header and central directory disagree (torch reads the central directory)"
                    ),
                });
            }
            self.record(r, len, entry, local.data_offset, &location, context, depth);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        r: &mut dyn ReadSeek,
        len: u64,
        entry: &Entry,
        data_offset: u64,
        location: &str,
        context: Context,
        depth: usize,
    ) {
        let named = entry.name.to_ascii_lowercase().ends_with(".pkl");
        let readable = match &entry.method {
            Method::Stored | Method::Deflated => None,
            Method::Other(why) => Some(why.clone()),
        };
        if let Some(why) = readable {
            if named {
                self.issue(unreadable(location, why));
            }
            return;
        }
        if data_offset
            .checked_add(entry.compressed_size)
            .is_none_or(|end| end > len)
        {
            self.issue(unreadable(
                location,
                format!(
                    "its {} bytes run past the end of the archive",
                    entry.compressed_size
                ),
            ));
            return;
        }
        let mut raw = Window::new(r, data_offset, entry.compressed_size);
        if named {
            let cap = entry.size.min(MAX_PICKLE_BYTES);
            if entry.size > MAX_PICKLE_BYTES {
                self.issue(unreadable(
                    location,
                    format!(
                        "the pickle is {} bytes, more than the {MAX_PICKLE_BYTES}-byte limit",
                        entry.size
                    ),
                ));
                return;
            }
            if let Some(bytes) = self.content(&mut raw, entry, cap, location) {
                self.pickles(&bytes, location, context, Found::Expected);
            }
            return;
        }
        let head = match self.content(&mut raw, entry, 8.min(entry.size), location) {
            Some(head) => head,
            None => return,
        };
        if head.starts_with(b"PK\x03\x04") {
            self.nested_zip(&mut raw, entry, location, depth);
        } else if is_pickle_start(&head) {
            let cap = entry.size.min(SNIFF_WINDOW);
            if let Some(bytes) = self.content(&mut raw, entry, cap, location) {
                let complete = bytes.len() as u64 == entry.size;
                self.sniffed(&bytes, complete, &mut raw, entry, location, context);
            }
        }
    }

    /// A pickle-looking record under another name: decode a window, grow it while the pickle
    /// runs on, and report it if it decodes (or names globals before breaking).
    fn sniffed(
        &mut self,
        first: &[u8],
        complete: bool,
        raw: &mut Window<'_>,
        entry: &Entry,
        location: &str,
        context: Context,
    ) {
        let mut bytes = first.to_vec();
        let mut complete = complete;
        loop {
            let partial = pickle::read_lenient(&bytes, Limits::default());
            let truncated = matches!(partial.end, Err(PickleError::Truncated { .. }));
            if truncated && !complete {
                let want = (bytes.len() as u64)
                    .saturating_mul(8)
                    .min(entry.size)
                    .min(MAX_PICKLE_BYTES);
                if want > bytes.len() as u64 {
                    match self.content(raw, entry, want, location) {
                        Some(more) => {
                            complete = more.len() as u64 == entry.size;
                            bytes = more;
                            continue;
                        }
                        None => return,
                    }
                }
            }
            if partial.end.is_ok() || !partial.globals.is_empty() {
                // A legacy stream stored as a record: scan it the way torch would.
                if bytes.starts_with(&MAGIC_PICKLE) {
                    let mut cursor = Cursor::new(bytes.as_slice());
                    let n = bytes.len() as u64;
                    self.stream(
                        &mut cursor,
                        n,
                        &format!("{location}!"),
                        context,
                        Found::Sniffed,
                    );
                } else {
                    self.push_pickle(location, Found::Sniffed, context, partial);
                }
            }
            return;
        }
    }

    fn nested_zip(&mut self, raw: &mut Window<'_>, entry: &Entry, location: &str, depth: usize) {
        if depth + 1 > MAX_NESTING {
            self.issue(unreadable(
                location,
                format!("an archive nested more than {MAX_NESTING} levels deep is not followed"),
            ));
            return;
        }
        let inner = format!("{location}!");
        match entry.method {
            Method::Stored => {
                let n = entry.size;
                self.zip(raw, n, &inner, depth + 1);
            }
            _ => {
                if let Some(bytes) = self.content(raw, entry, entry.size, location) {
                    let n = bytes.len() as u64;
                    self.zip(&mut Cursor::new(bytes), n, &inner, depth + 1);
                }
            }
        }
    }

    /// The first `want` uncompressed bytes of a record, inflating it if deflated (within the
    /// ratio and total budgets). `None` after recording why not.
    fn content(
        &mut self,
        raw: &mut Window<'_>,
        entry: &Entry,
        want: u64,
        location: &str,
    ) -> Option<Vec<u8>> {
        use std::io::{Seek, SeekFrom};
        let result = raw.seek(SeekFrom::Start(0)).and_then(|_| match entry.method {
            Method::Stored => read_up_to(raw, want),
            _ => {
                if want > RATIO_FLOOR && want / entry.compressed_size.max(1) > MAX_INFLATE_RATIO {
                    return Err(std::io::Error::other(format!(
                        "it inflates {}:1, above the {MAX_INFLATE_RATIO}:1 limit (a decompression bomb)",
                        want / entry.compressed_size.max(1)
                    )));
                }
                if self.inflated.saturating_add(want) > MAX_INFLATED_TOTAL {
                    return Err(std::io::Error::other(format!(
                        "the scan would inflate more than {MAX_INFLATED_TOTAL} bytes in total"
                    )));
                }
                let bytes = read_up_to(&mut DeflateDecoder::new(&mut *raw), want)?;
                self.inflated += bytes.len() as u64;
                Ok(bytes)
            }
        });
        match result {
            Ok(bytes) if (bytes.len() as u64) < want => {
                self.issue(unreadable(
                    location,
                    format!(
                        "the record holds {} bytes, fewer than the {} its entry declares",
                        bytes.len(),
                        entry.size
                    ),
                ));
                None
            }
            Ok(bytes) => Some(bytes),
            Err(e) => {
                self.issue(unreadable(location, format!("cannot read the record: {e}")));
                None
            }
        }
    }

    // ----------------------------------------------------------------------------- pickles

    /// Scans the one pickle of a record; errors make the record unreadable.
    fn pickles(&mut self, bytes: &[u8], location: &str, context: Context, found: Found) {
        let partial = pickle::read_lenient(bytes, Limits::default());
        self.push_pickle(location, found, context, partial);
    }

    fn push_pickle(
        &mut self,
        location: &str,
        found: Found,
        context: Context,
        partial: pickle::Partial,
    ) {
        if self.scan.pickles.len() >= MAX_PICKLES {
            self.issue(unreadable(
                location,
                format!("more than {MAX_PICKLES} pickles; the rest are not scanned"),
            ));
            return;
        }
        let mut globals: Vec<GlobalUse> = Vec::new();
        for &id in &partial.globals {
            let Some(global) = partial.graph.global(id) else {
                continue;
            };
            let path = dotted(global);
            match globals.iter_mut().find(|u| u.path == path) {
                Some(seen) => seen.count += 1,
                None => globals.push(GlobalUse {
                    verdict: classify(global, context, self.allowed),
                    global: global.clone(),
                    path,
                    count: 1,
                }),
            }
        }
        let ambiguous = matches!(partial.end, Err(PickleError::Ambiguous { .. }));
        let error = partial.end.err().map(|e| e.to_string());
        match (&error, found) {
            (Some(e), Found::Expected) if ambiguous => self.issue(Issue {
                location: location.to_owned(),
                severity: Severity::Evasion,
                message: e.clone(),
            }),
            (Some(e), Found::Expected) => self.issue(unreadable(
                location,
                format!("the pickle cannot be read: {e}"),
            )),
            _ => {}
        }
        self.scan.pickles.push(PickleScan {
            location: location.to_owned(),
            found,
            globals,
            error,
        });
    }

    /// What torch's legacy loader unpickles from the start of `r`: one pickle, and the four
    /// after it when the first is the legacy magic number or a value a global computes (torch
    /// compares that value with the magic number, and it may compare equal). Returns which it
    /// was.
    fn stream(
        &mut self,
        r: &mut dyn ReadSeek,
        len: u64,
        outer: &str,
        context: Context,
        found: Found,
    ) -> StreamKind {
        let mut pos = 0u64;
        let mut kind = StreamKind::Single;
        for index in 1..=5 {
            let location = format!("{outer}stream#{index}");
            if kind == StreamKind::Computed && pos >= len {
                // A computed first value then the end of the file: torch stops at its
                // magic-number check (or on the end of the file), having read nothing more.
                return kind;
            }
            let Some(partial) = self.next_pickle(r, len, pos, &location) else {
                return kind;
            };
            let end = partial.end.as_ref().ok().copied();
            if index == 1 {
                let magic =
                    end.is_some_and(|n| read_at(r, 0, n as u64).is_ok_and(|b| is_legacy_magic(&b)));
                if magic {
                    kind = StreamKind::Legacy;
                } else if end.is_some() && !partial.globals.is_empty() {
                    kind = StreamKind::Computed;
                } else if found == Found::Sniffed && end.is_none() && partial.globals.is_empty() {
                    return kind;
                } else if end.is_none()
                    && partial.globals.is_empty()
                    && pos == 0
                    && !matches!(partial.end, Err(PickleError::Ambiguous { .. }))
                {
                    // Not a pickle at all (or broken before naming anything).
                    let why = partial.end.err().map(|e| e.to_string()).unwrap_or_default();
                    self.issue(unreadable(
                        outer,
                        format!(
                            "cannot be read as a pickle (nor is it a zip or tar archive): {why}"
                        ),
                    ));
                    return kind;
                }
            }
            self.push_pickle(&location, found, context, partial);
            match end {
                Some(n) if kind != StreamKind::Single => pos += n as u64,
                _ => return kind,
            }
        }
        kind
    }

    /// Decodes the pickle at `pos`, growing the window while it runs on.
    fn next_pickle(
        &mut self,
        r: &mut dyn ReadSeek,
        len: u64,
        pos: u64,
        location: &str,
    ) -> Option<pickle::Partial> {
        let cap = (len - pos.min(len)).min(MAX_PICKLE_BYTES);
        let mut window = cap.min(SNIFF_WINDOW);
        loop {
            let bytes = match read_at(r, pos, window) {
                Ok(b) => b,
                Err(e) => {
                    self.issue(unreadable(location, format!("cannot read: {e}")));
                    return None;
                }
            };
            let partial = pickle::read_lenient(&bytes, Limits::default());
            match partial.end {
                Err(PickleError::Truncated { .. }) if window < cap => {
                    window = window.saturating_mul(8).min(cap);
                }
                _ => return Some(partial),
            }
        }
    }

    // ----------------------------------------------------------------------------- tar

    /// Every pickle torch unpickles from a tar checkpoint, and `sys_info`, as the one tar
    /// reader walks them ([`tar::walk`]), each with its globals reported. A container that is
    /// not exactly what torch's writer produced is ambiguous (an evasion); a member the walk
    /// cannot finish is an evasion or unreadable as its fault says. When the container is
    /// refused, torch may fall back to reading a legacy stream from byte 0 (it does whenever
    /// `tarfile` raises): whatever pickle starts there is reported as well.
    fn tar(&mut self, file: &File, len: u64) {
        let walked = tar::walk(file, len, false, &mut |visit| {
            let found = if visit.read_by_torch {
                Found::Expected
            } else {
                Found::Sniffed
            };
            self.push_pickle(&visit.location, found, Context::Checkpoint, visit.partial);
        });
        match walked {
            Ok(walked) => {
                for fault in walked.faults {
                    self.issue(tar_issue(fault));
                }
            }
            Err(fault) => {
                self.issue(tar_issue(fault));
                let mut reader = file;
                self.stream(
                    &mut reader,
                    len,
                    "fallback:",
                    Context::Checkpoint,
                    Found::Sniffed,
                );
            }
        }
    }
}

/// A tar reader's fault as a scan issue: ambiguous is an evasion.
fn tar_issue(fault: tar::Fault) -> Issue {
    match fault {
        tar::Fault::Ambiguous(m) => Issue {
            location: "tar".into(),
            severity: Severity::Evasion,
            message: format!("ambiguous tar checkpoint (torch may read it otherwise): {m}"),
        },
        tar::Fault::Unreadable(m) => unreadable("tar", m),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StreamKind {
    /// One pickle (a plain pickle file, or one whose first value is not the magic number).
    Single,
    /// The legacy magic number, literally: torch reads four more pickles.
    Legacy,
    /// A first value computed by a global: torch reads on if it equals the magic number.
    Computed,
}

/// `\x80` then a protocol number 2–5: how every pickle torch or Python 3 writes begins.
fn is_pickle_start(head: &[u8]) -> bool {
    matches!(head, [0x80, 2..=5, ..])
}

/// Whether `r` (a whole file of `len` bytes) is a valid safetensors file: its header parses
/// and validates with the `safetensors` crate, and the data it describes ends exactly at the
/// end of the file.
fn is_safetensors(r: &mut dyn ReadSeek, len: u64) -> bool {
    ckpt_formats::torch::safetensors::Header::read(r, len)
        .is_ok_and(|h| h.data_len().checked_add(h.data_start()) == Some(len))
}

fn is_legacy_magic(bytes: &[u8]) -> bool {
    ckpt_formats::torch::legacy::is_legacy(bytes)
}

/// How a record is compressed.
#[derive(Clone, Debug)]
enum Method {
    Stored,
    Deflated,
    /// Encrypted or another method: why it cannot be read.
    Other(String),
}

/// The central directory's facts about one record.
#[derive(Clone, Debug)]
struct Entry {
    name: String,
    name_raw: Vec<u8>,
    size: u64,
    compressed_size: u64,
    method: Method,
    header_offset: u64,
}

/// Lists the central directory as torch's reader sees it ([`zip_dir::read_directory`]:
/// anything another reader could see differently is [`ZipError::Ambiguous`]), with whether
/// `torch.load` would hand the archive to `torch.jit.load`.
fn list_entries(r: &mut dyn ReadSeek, len: u64) -> Result<(Vec<Entry>, bool), ZipError> {
    let directory = zip_dir::read_directory(r, len)?;
    let torchscript = directory.is_torchscript();
    let entries = directory
        .entries
        .into_iter()
        .filter(|e| !e.is_dir)
        .map(|e| {
            let method = if e.flags & 0x1 != 0 {
                Method::Other("the record is encrypted".into())
            } else {
                match e.method {
                    0 => Method::Stored,
                    8 => Method::Deflated,
                    other => Method::Other(format!("unsupported compression method {other}")),
                }
            };
            Entry {
                name: String::from_utf8_lossy(&e.name).into_owned(),
                name_raw: e.name,
                size: e.size,
                compressed_size: e.compressed_size,
                method,
                header_offset: e.header_offset,
            }
        })
        .collect();
    Ok((entries, torchscript))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scan_bytes(bytes: &[u8]) -> FileScan {
        let mut file = tempfile::NamedTempFile::new().expect("temp file");
        file.write_all(bytes).expect("write");
        scan_file(file.path(), &AllowList::default())
    }

    /// A safetensors file with one float32 tensor `a` of shape [1]; the header (JSON with
    /// `spaces` newlines and spaces after the `{`) is padded to `header_len` bytes.
    fn safetensors(header_len: usize, spaces: &str) -> Vec<u8> {
        let json = format!(r#"{{{spaces}"a":{{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}}}"#);
        let mut header = json.into_bytes();
        assert!(header.len() <= header_len);
        header.resize(header_len, b' ');
        let mut out = (header_len as u64).to_le_bytes().to_vec();
        out.extend(header);
        out.extend_from_slice(&1f32.to_le_bytes());
        out
    }

    #[test]
    fn an_unreadable_local_header_under_an_intact_directory_is_ambiguous_not_unreadable() {
        // Found by the oracle fuzz: a record torch never reads (its name's case changed)
        // with a local name length of 65535; torch loads the file, so "unreadable" was wrong.
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/zip_train_ckpt.pth");
        let mut bytes = std::fs::read(path).expect("fixture");
        let version = bytes
            .windows(4)
            .enumerate()
            .filter(|(_, w)| *w == b"PK\x03\x04")
            .map(|(i, _)| i)
            .find(|&i| bytes[i + 30..].starts_with(b"zip_train_ckpt/version"))
            .expect("the version record's local header");
        bytes[version + 26..version + 28].copy_from_slice(&u16::MAX.to_le_bytes());
        let scan = scan_bytes(&bytes);
        assert_eq!(scan.status(), Status::Dangerous, "{:?}", scan.issues);
        assert!(scan.issues.iter().all(|i| i.severity == Severity::Evasion));
    }

    #[test]
    fn safetensors_scans_clean() {
        let scan = scan_bytes(&safetensors(64, ""));
        assert_eq!(scan.format, "safetensors");
        assert_eq!(scan.status(), Status::Clean, "{:?}", scan.issues);
    }

    #[test]
    fn safetensors_whose_first_bytes_name_a_global_is_not_clean() {
        // Header length 0x0a7863: its bytes read `c`, `x`, `\n` — GLOBAL with module `x`
        // and a name running to the newline in the JSON. torch.load unpickles from byte 0
        // and asks for that global before failing.
        let bytes = safetensors(0x0a_7863, "\n");
        assert!(bytes.starts_with(b"cx\n"));
        let scan = scan_bytes(&bytes);
        assert_eq!(scan.format, "safetensors");
        assert_eq!(scan.status(), Status::Unknown);
        assert_eq!(scan.uses().count(), 1);
    }

    #[test]
    fn a_file_neither_pickle_nor_safetensors_is_unreadable() {
        let mut bytes = safetensors(64, "");
        bytes.push(0); // one byte past the data the header describes
        assert_eq!(scan_bytes(&bytes).status(), Status::Unreadable);
    }

    #[test]
    fn an_ambiguous_pickle_is_an_evasion() {
        // BINBYTES straddles the frame's end: CPython reads its rest from after the frame.
        let mut bytes =
            b"\x80\x04\x95\x08\x00\x00\x00\x00\x00\x00\x00B\x05\x00\x00\x00abc".to_vec();
        bytes.extend_from_slice(b"de.");
        let scan = scan_bytes(&bytes);
        assert_eq!(scan.status(), Status::Dangerous);
        assert!(scan.issues.iter().all(|i| i.severity == Severity::Evasion));
    }
}
