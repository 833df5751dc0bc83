//! A check of a plug-in file against its own ELF program headers before it is
//! handed to the dynamic loader.
//!
//! The loader maps each loadable segment of a library from the file; a segment
//! that reaches past the end of a truncated file (a half-written install, a
//! copy cut short) is mapped all the same, and the first touch of its missing
//! part kills the process with SIGBUS inside `dlopen`. So before loading, every
//! `PT_LOAD` segment's file range, and the program header table itself, must lie
//! inside the file. A file that does not start with the ELF magic is left to the
//! loader, whose message says what it is not.
//!
//! The check reads the file's headers only (a few KiB), never the whole file.
//! A file replaced between the check and the load is not covered: the check
//! catches files left incomplete, not a race with a writer.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// `\x7fELF`.
const MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
/// `p_type` of a loadable segment.
const PT_LOAD: u32 = 1;
/// `e_phnum` value meaning "the real count is elsewhere" (not used by shared
/// libraries the loader accepts in practice; refused rather than guessed).
const PN_XNUM: u16 = 0xffff;
/// Most program headers read (real libraries have about ten).
const MAX_PROGRAM_HEADERS: u16 = 4096;

/// What is wrong with a file that claims to be ELF.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElfDefect {
    /// The file cannot be read.
    #[error("cannot read it: {0}")]
    Unreadable(String),
    /// The ELF header itself is cut short.
    #[error("the file is {size} bytes, shorter than its ELF header ({needed} bytes)")]
    HeaderCut {
        /// The file's size.
        size: u64,
        /// Bytes the header needs.
        needed: u64,
    },
    /// An identification byte holds a value ELF does not define.
    #[error("its ELF identification is invalid ({0})")]
    BadIdent(&'static str),
    /// The program header table reaches past the end of the file.
    #[error("its program header table (bytes {start}..{end}) reaches past the end of the {size}-byte file: the file is truncated")]
    ProgramHeadersCut {
        /// First byte of the table.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// The file's size.
        size: u64,
    },
    /// The program header table's entry size or count is not usable.
    #[error("its program header table is malformed ({0})")]
    BadProgramHeaders(&'static str),
    /// A loadable segment reaches past the end of the file.
    #[error("loadable segment {index} (file bytes {start}..{end}) reaches past the end of the {size}-byte file: the file is truncated")]
    SegmentCut {
        /// The segment's index in the program header table.
        index: u16,
        /// Its first byte in the file.
        start: u64,
        /// One past its last byte in the file.
        end: u64,
        /// The file's size.
        size: u64,
    },
}

/// The fields of the ELF header the check needs.
struct Layout {
    class64: bool,
    little: bool,
}

impl Layout {
    fn u16_at(&self, b: &[u8], at: usize) -> u16 {
        let v = [b[at], b[at + 1]];
        if self.little {
            u16::from_le_bytes(v)
        } else {
            u16::from_be_bytes(v)
        }
    }

    fn u32_at(&self, b: &[u8], at: usize) -> u32 {
        let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.little {
            u32::from_le_bytes(v)
        } else {
            u32::from_be_bytes(v)
        }
    }

    fn u64_at(&self, b: &[u8], at: usize) -> u64 {
        let mut v = [0u8; 8];
        v.copy_from_slice(&b[at..at + 8]);
        if self.little {
            u64::from_le_bytes(v)
        } else {
            u64::from_be_bytes(v)
        }
    }

    /// A word: 8 bytes in ELF64, 4 in ELF32.
    fn word_at(&self, b: &[u8], at: usize) -> u64 {
        if self.class64 {
            self.u64_at(b, at)
        } else {
            u64::from(self.u32_at(b, at))
        }
    }
}

/// Checks the file at `path`. `Ok` for a file whose program header table and
/// loadable segments all lie inside it, and for a file that is not ELF at all
/// (the loader reports that one).
pub(super) fn check_segments_inside_file(path: &Path) -> Result<(), ElfDefect> {
    let unreadable = |e: std::io::Error| ElfDefect::Unreadable(e.to_string());
    let mut file = File::open(path).map_err(unreadable)?;
    let size = file.metadata().map_err(unreadable)?.len();
    let mut ident = [0u8; 16];
    let got = read_up_to(&mut file, &mut ident).map_err(unreadable)?;
    if got < MAGIC.len() || ident[..4] != MAGIC {
        return Ok(());
    }
    if got < ident.len() {
        return Err(ElfDefect::HeaderCut {
            size,
            needed: ident.len() as u64,
        });
    }
    let layout = Layout {
        class64: match ident[4] {
            1 => false,
            2 => true,
            _ => return Err(ElfDefect::BadIdent("EI_CLASS is neither 32- nor 64-bit")),
        },
        little: match ident[5] {
            1 => true,
            2 => false,
            _ => {
                return Err(ElfDefect::BadIdent(
                    "EI_DATA is neither little- nor big-endian",
                ))
            }
        },
    };
    let header_size: usize = if layout.class64 { 64 } else { 52 };
    let mut header = vec![0u8; header_size];
    file.seek(SeekFrom::Start(0)).map_err(unreadable)?;
    if read_up_to(&mut file, &mut header).map_err(unreadable)? < header_size {
        return Err(ElfDefect::HeaderCut {
            size,
            needed: header_size as u64,
        });
    }
    // e_phoff, e_phentsize, e_phnum.
    let (phoff, phentsize, phnum) = if layout.class64 {
        (
            layout.u64_at(&header, 32),
            layout.u16_at(&header, 54),
            layout.u16_at(&header, 56),
        )
    } else {
        (
            u64::from(layout.u32_at(&header, 28)),
            layout.u16_at(&header, 42),
            layout.u16_at(&header, 44),
        )
    };
    if phnum == 0 {
        return Ok(());
    }
    let entry_size: u16 = if layout.class64 { 56 } else { 32 };
    if phentsize < entry_size {
        return Err(ElfDefect::BadProgramHeaders(
            "its entries are smaller than a program header",
        ));
    }
    if phnum == PN_XNUM || phnum > MAX_PROGRAM_HEADERS {
        return Err(ElfDefect::BadProgramHeaders("it has too many entries"));
    }
    let table_len = u64::from(phentsize) * u64::from(phnum);
    let table_end = phoff
        .checked_add(table_len)
        .ok_or(ElfDefect::ProgramHeadersCut {
            start: phoff,
            end: u64::MAX,
            size,
        })?;
    if table_end > size {
        return Err(ElfDefect::ProgramHeadersCut {
            start: phoff,
            end: table_end,
            size,
        });
    }
    let mut table = vec![0u8; table_len as usize];
    file.seek(SeekFrom::Start(phoff)).map_err(unreadable)?;
    file.read_exact(&mut table).map_err(unreadable)?;
    for index in 0..phnum {
        let entry = &table[usize::from(index) * usize::from(phentsize)..];
        if layout.u32_at(entry, 0) != PT_LOAD {
            continue;
        }
        // p_offset and p_filesz.
        let (offset, file_size) = if layout.class64 {
            (layout.word_at(entry, 8), layout.word_at(entry, 32))
        } else {
            (layout.word_at(entry, 4), layout.word_at(entry, 16))
        };
        let end = offset.saturating_add(file_size);
        if end > size {
            return Err(ElfDefect::SegmentCut {
                index,
                start: offset,
                end,
                size,
            });
        }
    }
    Ok(())
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The test binary itself: a complete ELF file with loadable segments.
    fn this_executable() -> Vec<u8> {
        std::fs::read(std::env::current_exe().unwrap()).unwrap()
    }

    fn check(bytes: &[u8]) -> Result<(), ElfDefect> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        file.flush().unwrap();
        check_segments_inside_file(file.path())
    }

    #[test]
    fn a_complete_file_passes_and_a_non_elf_file_is_left_to_the_loader() {
        assert_eq!(check(&this_executable()), Ok(()));
        assert_eq!(check(b"this is not an ELF file\n"), Ok(()));
        assert_eq!(check(b""), Ok(()));
    }

    #[test]
    fn every_cut_that_drops_part_of_a_loadable_segment_is_found() {
        let full = this_executable();
        // The test binary's first loadable segment alone is larger than 100 KB.
        for size in [5, 16, 40, 63, 64, 100, 1_000, 10_000, 100_000] {
            let err = check(&full[..size]).expect_err(&format!("cut at {size} bytes"));
            let text = err.to_string();
            assert!(
                text.contains("truncated") || text.contains("shorter than its ELF header"),
                "{size}: {text}"
            );
        }
    }

    #[test]
    fn a_cut_outside_every_loadable_segment_is_not_this_checks_business() {
        // The section header table ends the file and is not loaded: a file cut
        // there keeps every segment whole (the loader does not need it).
        let full = this_executable();
        assert_eq!(check(&full[..full.len() - 1]), Ok(()));
    }

    #[test]
    fn malformed_identification_is_named() {
        let mut bytes = this_executable()[..64].to_vec();
        bytes[4] = 9;
        assert!(matches!(check(&bytes), Err(ElfDefect::BadIdent(_))));
        let mut bytes = this_executable()[..64].to_vec();
        bytes[5] = 0;
        assert!(matches!(check(&bytes), Err(ElfDefect::BadIdent(_))));
    }
}
