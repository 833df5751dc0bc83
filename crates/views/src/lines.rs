//! Line-oriented inputs (`process --input`, `emit --events`): opened only when they
//! can end, and read with a bound on the length of each line, so that an endless or
//! hostile input costs bounded memory and every line gets a number and a verdict.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context as _};

/// Opens an input named on the command line: `-` is standard input; a path must be a
/// regular file, a FIFO or a socket (a pipe such as `<(command)` is a FIFO). Devices
/// (`/dev/zero`) and directories are refused: they never end, or are not text.
pub fn open_input(name: &Path, option: &str) -> anyhow::Result<Box<dyn Read>> {
    if name.as_os_str() == "-" {
        return Ok(Box::new(io::stdin().lock()));
    }
    let meta = std::fs::metadata(name)
        .with_context(|| format!("cannot open {option} {}", name.display()))?;
    let file_type = meta.file_type();
    {
        use std::os::unix::fs::FileTypeExt as _;
        let refused = if file_type.is_dir() {
            Some("a directory")
        } else if file_type.is_char_device() {
            Some("a character device")
        } else if file_type.is_block_device() {
            Some("a block device")
        } else {
            None
        };
        if let Some(found) = refused {
            bail!(
                "{option} {} is {found}; accepted: a regular file, a pipe or FIFO, or - for standard input",
                name.display()
            );
        }
    }
    let file =
        File::open(name).with_context(|| format!("cannot open {option} {}", name.display()))?;
    Ok(Box::new(file))
}

/// One line as read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// The line's bytes, without its newline.
    Bytes(&'a [u8]),
    /// The line was longer than the limit; it was skipped without being kept, and
    /// this is how many bytes it had (its newline not counted).
    TooLong(u64),
}

/// Lines of at most `limit` bytes each, numbered from 1.
pub struct BoundedLines<R> {
    reader: BufReader<R>,
    limit: usize,
    number: u64,
    line: Vec<u8>,
}

impl<R: Read> BoundedLines<R> {
    /// Reads `input` through a buffer of `buffer` bytes.
    pub fn new(input: R, limit: usize, buffer: usize) -> BoundedLines<R> {
        BoundedLines {
            reader: BufReader::with_capacity(buffer, input),
            limit,
            number: 0,
            line: Vec::new(),
        }
    }

    /// The next line and its number, or `None` at the end of the input. A last line
    /// without a newline counts as a line.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, Line<'_>)>> {
        self.line.clear();
        let mut length = 0u64;
        let mut any = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let (piece, ends) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..at], true),
                None => (available, false),
            };
            length += piece.len() as u64;
            if length <= self.limit as u64 {
                self.line.extend_from_slice(piece);
            } else if !self.line.is_empty() {
                // Over the limit: forget what was kept; only the length is counted.
                self.line = Vec::new();
            }
            let used = piece.len() + usize::from(ends);
            self.reader.consume(used);
            if ends {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        let line = if length > self.limit as u64 {
            Line::TooLong(length)
        } else {
            Line::Bytes(&self.line)
        };
        Ok(Some((self.number, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &[u8], limit: usize) -> Vec<(u64, Result<Vec<u8>, u64>)> {
        let mut lines = BoundedLines::new(text, limit, 4);
        let mut out = Vec::new();
        while let Some((n, line)) = lines.next_line().unwrap() {
            out.push((
                n,
                match line {
                    Line::Bytes(b) => Ok(b.to_vec()),
                    Line::TooLong(len) => Err(len),
                },
            ));
        }
        out
    }

    #[test]
    fn long_lines_are_measured_not_kept_and_numbering_goes_on() {
        assert_eq!(
            all(b"ab\n0123456789\n\ncd", 5),
            vec![
                (1, Ok(b"ab".to_vec())),
                (2, Err(10)),
                (3, Ok(Vec::new())),
                (4, Ok(b"cd".to_vec())),
            ]
        );
        assert_eq!(all(b"", 5), vec![]);
        assert_eq!(all(b"12345\n", 5), vec![(1, Ok(b"12345".to_vec()))]);
        assert_eq!(all(b"123456", 5), vec![(1, Err(6))]);
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let err = open_input(Path::new("/dev/zero"), "--input").err().unwrap();
        assert!(err.to_string().contains("a character device"), "{err}");
        let err = open_input(Path::new("/"), "--input").err().unwrap();
        assert!(err.to_string().contains("a directory"), "{err}");
    }
}
