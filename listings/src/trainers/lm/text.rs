//! The text the language models learn: the King James Bible as Debian's
//! `bible-kjv` prints it, written to `target/text/kjv.txt` by `cargo
//! xtask setup`, split by position into training, validation and test
//! bytes.

use std::path::PathBuf;

/// The text's size in bytes and FNV-1a 64 hash, as `cargo xtask setup`
/// records them: another text is an error, not a silently new result.
pub const KJV_BYTES: usize = 4_298_239;
pub const KJV_FNV: u64 = 0x21be_438c_ea80_82f0;

/// The split, by position in the text (Genesis first, Revelation last):
/// the first 90 % of the bytes train, the next 5 % validate, the last 5 %
/// test. Each cut is at the first newline at or after the share.
pub const SPLIT: [f64; 2] = [0.90, 0.95];

/// The three parts of the text.
#[derive(Clone, Debug, PartialEq)]
pub struct Corpus {
    pub train: Vec<u8>,
    pub valid: Vec<u8>,
    pub test: Vec<u8>,
}

/// Where the text lives.
pub fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/text/kjv.txt")
}

/// The text, checked, or an error that says how to get it.
pub fn kjv() -> Result<Vec<u8>, String> {
    let path = path();
    let bytes = std::fs::read(&path).map_err(|e| {
        format!(
            "the language-model study's text {} cannot be read ({e}); \
             run `cargo xtask setup`, which installs it from Debian's \
             bible-kjv package",
            path.display()
        )
    })?;
    let hash = crate::appendix::how_built::content_hash(&bytes);
    if bytes.len() != KJV_BYTES || hash != KJV_FNV {
        return Err(format!(
            "{} holds {} bytes with FNV-1a {hash:016x}, not the {KJV_BYTES} \
             bytes with {KJV_FNV:016x} the study was trained on; delete it \
             and run `cargo xtask setup`",
            path.display(),
            bytes.len()
        ));
    }
    Ok(bytes)
}

/// Where the split cuts `text`: the first newline at or after each share.
pub fn cuts(text: &[u8]) -> [usize; 2] {
    SPLIT.map(|share| {
        let at = (share * text.len() as f64) as usize;
        text[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |i| at + i + 1)
    })
}

/// The text split into its three parts.
pub fn corpus() -> Result<Corpus, String> {
    let text = kjv()?;
    let [a, b] = cuts(&text);
    Ok(Corpus {
        train: text[..a].to_vec(),
        valid: text[a..b].to_vec(),
        test: text[b..].to_vec(),
    })
}
