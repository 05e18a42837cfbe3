//! `{{#output NAME}}`, on a line of its own: what the experiment NAME of
//! `listings::outputs` prints, computed while the book builds, in a text
//! block under a numbered caption with the id `output-NAME`.

use crate::number::Kind;
use std::fmt::Write as _;

/// The captioned text block of output `name`, which printed `text`.
pub(crate) fn expand(out: &mut String, name: &str, label: &str, text: &str) {
    let id = Kind::Output.id(name);
    let _ = writeln!(
        out,
        "<p class=\"output-caption\" id=\"{id}\"><a class=\"caption-label\" \
         href=\"#{id}\">{label}</a>: what <code>{name}</code> prints</p>\n\n\
         ```text\n{}\n```\n",
        text.trim_end()
    );
}
