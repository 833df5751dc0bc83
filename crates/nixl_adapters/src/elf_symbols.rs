//! The dynamic symbols a shared library defines, read from its file (64-bit
//! little-endian ELF: the section headers, `.dynsym` and its string table),
//! without loading it.

use std::collections::HashMap;
use std::path::Path;

/// Why a file's symbols could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    /// The file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// The file is not what is accepted.
    #[error("{path} is not a 64-bit little-endian ELF shared library with a dynamic symbol table: {reason}")]
    NotElf {
        /// The file.
        path: String,
        /// What is wrong.
        reason: &'static str,
    },
}

const SHT_DYNSYM: u32 = 11;
const SYMBOL_SIZE: usize = 24;

/// `N` bytes at `base + offset`, or `None` past the end (or on overflow).
fn bytes_at<const N: usize>(data: &[u8], base: usize, offset: usize) -> Option<[u8; N]> {
    let start = base.checked_add(offset)?;
    data.get(start..start.checked_add(N)?)?.try_into().ok()
}

fn u16_at(data: &[u8], base: usize, offset: usize) -> Option<u16> {
    bytes_at(data, base, offset).map(u16::from_le_bytes)
}

fn u32_at(data: &[u8], base: usize, offset: usize) -> Option<u32> {
    bytes_at(data, base, offset).map(u32::from_le_bytes)
}

fn u64_at(data: &[u8], base: usize, offset: usize) -> Option<u64> {
    bytes_at(data, base, offset).map(u64::from_le_bytes)
}

fn usize_at(data: &[u8], base: usize, offset: usize) -> Option<usize> {
    usize::try_from(u64_at(data, base, offset)?).ok()
}

/// Every symbol the library at `path` defines in its dynamic symbol table,
/// with its size in bytes.
pub fn defined_dynamic_symbols(path: &Path) -> Result<HashMap<String, u64>, ElfError> {
    let data = std::fs::read(path).map_err(|source| ElfError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse(&data).map_err(|reason| ElfError::NotElf {
        path: path.display().to_string(),
        reason,
    })
}

fn parse(data: &[u8]) -> Result<HashMap<String, u64>, &'static str> {
    if data.get(..4) != Some(b"\x7fELF") {
        return Err("no ELF magic");
    }
    if data.get(4) != Some(&2) || data.get(5) != Some(&1) {
        return Err("not 64-bit little-endian");
    }
    let truncated = "the file is cut short";
    let section_table = usize_at(data, 0, 0x28).ok_or(truncated)?;
    let entry_size = usize::from(u16_at(data, 0, 0x3a).ok_or(truncated)?);
    let count = usize::from(u16_at(data, 0, 0x3c).ok_or(truncated)?);
    if entry_size < 0x40 {
        return Err("no section headers");
    }
    let section = |index: usize| -> Option<usize> {
        section_table.checked_add(index.checked_mul(entry_size)?)
    };
    for index in 0..count {
        let header = section(index).ok_or(truncated)?;
        if u32_at(data, header, 4).ok_or(truncated)? != SHT_DYNSYM {
            continue;
        }
        let offset = usize_at(data, header, 0x18).ok_or(truncated)?;
        let size = usize_at(data, header, 0x20).ok_or(truncated)?;
        let link = u32_at(data, header, 0x28).ok_or(truncated)? as usize;
        let strings_header = section(link).ok_or(truncated)?;
        let strings_offset = usize_at(data, strings_header, 0x18).ok_or(truncated)?;
        let strings_size = usize_at(data, strings_header, 0x20).ok_or(truncated)?;
        let strings = strings_offset
            .checked_add(strings_size)
            .and_then(|end| data.get(strings_offset..end))
            .ok_or(truncated)?;
        let table = offset
            .checked_add(size)
            .and_then(|end| data.get(offset..end))
            .ok_or(truncated)?;
        let mut symbols = HashMap::new();
        for symbol in table.chunks_exact(SYMBOL_SIZE) {
            let name_at = u32_at(symbol, 0, 0).ok_or(truncated)? as usize;
            let defined = u16_at(symbol, 0, 6).ok_or(truncated)? != 0;
            if !defined || name_at == 0 {
                continue;
            }
            let Some(rest) = strings.get(name_at..) else {
                continue;
            };
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            let name = String::from_utf8_lossy(&rest[..end]).into_owned();
            symbols.insert(name, u64_at(symbol, 0, 16).ok_or(truncated)?);
        }
        return Ok(symbols);
    }
    Err("no dynamic symbol table")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_inputs_are_errors_not_panics() {
        assert!(parse(b"").is_err());
        assert!(parse(b"\x7fELF").is_err());
        let mut header = vec![0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = 2;
        header[5] = 1;
        assert_eq!(parse(&header), Err("no section headers"));
        header[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        header[0x3a] = 0x40;
        header[0x3c] = 3;
        assert!(parse(&header).is_err());
    }

    #[test]
    fn a_real_library_lists_its_symbols_with_sizes() {
        // The adapters this crate builds export exactly three symbols.
        let adapter = crate::built_adapter(&crate::GENERATIONS[4]);
        let symbols = defined_dynamic_symbols(&adapter).unwrap();
        assert!(
            symbols.contains_key("nixl_telemetry_plugin_init"),
            "{symbols:?}"
        );
        assert_eq!(
            symbols.get("nixl_telemetry_nixl_adapter"),
            Some(&9),
            "\"nixl-1.5\" and its NUL"
        );
    }
}
