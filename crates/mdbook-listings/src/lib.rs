//! The book's mdBook preprocessor. It runs before mdBook's own `links`
//! preprocessor and does four things to every chapter:
//!
//! - **Listings.** A code block that includes a file by anchor
//!   (`{{#include path:anchor}}` or `{{#rustdoc_include path:anchor}}`)
//!   gets a numbered caption with an id, `Listing 2.1`. The anchor must exist
//!   and enclose some code: mdBook itself would show an empty block.
//! - **Figures.** `{{#figure NAME}}` on a line of its own becomes the SVG
//!   drawn by the figure NAME of the `figures` crate, in a `<figure>` with
//!   an id and a numbered caption.
//! - **Outputs.** `{{#output NAME}}` becomes a text block with what the
//!   experiment NAME of `listings::outputs` prints, computed now.
//! - **References.** `{{#ref figure:NAME}}`, `{{#ref listing:ANCHOR}}` and
//!   `{{#ref output:NAME}}` become links to the numbered item, in this
//!   chapter or another one.
//!
//! Any unknown name, missing anchor or malformed directive is an error that
//! stops the build and says where it is and what would have been valid.
//! The preprocessor writes no files.

use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// A drawn figure with its words.
pub struct FigureData {
    pub caption: String,
    pub alt: String,
    pub svg: String,
}

/// Where figures and outputs come from. The book uses [`BookRegistry`];
/// tests use a small fake.
pub trait Registry: Sync {
    fn figure(&self, name: &str) -> Option<FigureData>;
    fn figure_names(&self) -> Vec<&'static str>;
    fn output(&self, name: &str) -> Option<String>;
    fn output_names(&self) -> Vec<&'static str>;
}

/// The figures of the `figures` crate and the outputs of `listings`.
pub struct BookRegistry;

impl Registry for BookRegistry {
    fn figure(&self, name: &str) -> Option<FigureData> {
        figures::find(name).map(|f| FigureData {
            caption: f.caption.to_string(),
            alt: f.alt.to_string(),
            svg: (f.render)(),
        })
    }
    fn figure_names(&self) -> Vec<&'static str> {
        figures::ALL.iter().map(|f| f.name).collect()
    }
    fn output(&self, name: &str) -> Option<String> {
        listings::outputs::find(name).map(|o| (o.run)())
    }
    fn output_names(&self) -> Vec<&'static str> {
        listings::outputs::ALL.iter().map(|o| o.name).collect()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Listing,
    Figure,
    Output,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Listing => "Listing",
            Kind::Figure => "Figure",
            Kind::Output => "Output",
        }
    }
    fn id(self, key: &str) -> String {
        format!("{}-{key}", self.word().to_lowercase())
    }
    fn parse(word: &str) -> Option<Kind> {
        match word {
            "listing" => Some(Kind::Listing),
            "figure" => Some(Kind::Figure),
            "output" => Some(Kind::Output),
            _ => None,
        }
    }
}

/// What the book is being prepared for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A renderer such as `html`: the reader's book.
    Render,
    /// `mdbook test`: rustdoc compiles and runs the Rust blocks. Listings
    /// (`{{#include}}` of library code) are marked `ignore`, because
    /// `cargo test` tests them where they live; runnable examples
    /// (`{{#rustdoc_include}}` of a file with `fn main`) are run.
    Test,
}

/// One chapter as the preprocessor sees it.
struct Chapter {
    /// "2" for chapter 2, "2.1" for its first section, "A" for the first
    /// appendix (an unnumbered chapter after the numbered ones), "0" for an
    /// unnumbered chapter before them.
    label: String,
    /// The chapter's path in `src/`, e.g. `m3/attention.md`.
    path: String,
    content: String,
}

/// Number every item in `book` (the JSON mdBook hands a preprocessor),
/// expand the directives, and return the edited book. `src` is the book's
/// source folder. On failure, every problem found, one per string.
pub fn process(
    book: &mut Value,
    src: &Path,
    registry: &dyn Registry,
    mode: Mode,
) -> Result<(), Vec<String>> {
    let mut chapters = Vec::new();
    let mut seen_numbered = false;
    let mut appendix = 0u8;
    collect(
        book.get("items"),
        &mut chapters,
        &mut seen_numbered,
        &mut appendix,
    );

    let mut errors = Vec::new();
    let index = number_items(&chapters, src, registry, &mut errors);
    let paths: Vec<String> = chapters.iter().map(|c| c.path.clone()).collect();
    let made = make_all(&index, registry);
    let mut expanded = Vec::with_capacity(chapters.len());
    for (i, ch) in chapters.iter().enumerate() {
        expanded.push(expand(
            mode,
            i,
            ch,
            &paths,
            &index,
            src,
            &made,
            &mut errors,
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut next = expanded.into_iter();
    write_back(book.get_mut("items"), &mut next);
    Ok(())
}

fn collect(
    items: Option<&Value>,
    out: &mut Vec<Chapter>,
    seen_numbered: &mut bool,
    appendix: &mut u8,
) {
    let Some(items) = items.and_then(Value::as_array) else {
        return;
    };
    for item in items {
        let Some(ch) = item.get("Chapter") else {
            continue;
        };
        let number: Vec<u64> = ch
            .get("number")
            .and_then(Value::as_array)
            .map(|n| n.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let label = if !number.is_empty() {
            *seen_numbered = true;
            let parts: Vec<String> =
                number.iter().map(u64::to_string).collect();
            parts.join(".")
        } else if *seen_numbered {
            *appendix += 1;
            char::from(b'A' + *appendix - 1).to_string()
        } else {
            "0".to_string()
        };
        out.push(Chapter {
            label,
            path: ch
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            content: ch
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        });
        collect(ch.get("sub_items"), out, seen_numbered, appendix);
    }
}

fn write_back(
    items: Option<&mut Value>,
    next: &mut impl Iterator<Item = String>,
) {
    let Some(items) = items.and_then(Value::as_array_mut) else {
        return;
    };
    for item in items {
        let Some(ch) = item.get_mut("Chapter") else {
            continue;
        };
        if let Some(content) = next.next() {
            ch["content"] = Value::String(content);
        }
        write_back(ch.get_mut("sub_items"), next);
    }
}

/// (kind, key) → every (chapter index, "Figure 2.1") that shows it.
type Index = HashMap<(Kind, String), Vec<(usize, String)>>;

/// A line of a chapter, classified.
enum Line<'a> {
    /// A fence that opens or closes a code block.
    Fence,
    /// `{{#include path:anchor}}` (a listing: library code) or
    /// `{{#rustdoc_include path:anchor}}` (a runnable example).
    Include { arg: &'a str, runnable: bool },
    /// `{{#figure NAME}}` or `{{#output NAME}}` alone on a line.
    Block { kind: Kind, name: &'a str },
    /// Anything else.
    Text,
}

/// The first place `tag` occurs in `text` without a backslash before it.
/// `\{{#name ...}}` is mdBook's escape: its `links` preprocessor removes
/// the backslash and leaves the directive as text, so we leave it alone.
fn find_unescaped(text: &str, tag: &str) -> Option<usize> {
    text.match_indices(tag)
        .map(|(i, _)| i)
        .find(|&i| !text[..i].ends_with('\\'))
}

fn classify(line: &str) -> Line<'_> {
    let t = line.trim();
    if t.starts_with("```") || t.starts_with("~~~") {
        return Line::Fence;
    }
    for tag in ["{{#include ", "{{#rustdoc_include "] {
        if let Some(rest) = find_unescaped(t, tag).map(|i| &t[i + tag.len()..])
        {
            if let Some(end) = rest.find("}}") {
                return Line::Include {
                    arg: rest[..end].trim(),
                    runnable: tag.contains("rustdoc"),
                };
            }
        }
    }
    for (tag, kind) in
        [("{{#figure ", Kind::Figure), ("{{#output ", Kind::Output)]
    {
        if let Some(rest) = t.strip_prefix(tag) {
            if let Some(name) = rest.strip_suffix("}}") {
                return Line::Block {
                    kind,
                    name: name.trim(),
                };
            }
        }
    }
    Line::Text
}

/// A line of a chapter with what the preprocessor needs to know about it.
struct Scanned<'a> {
    text: &'a str,
    line: Line<'a>,
    /// Inside a fenced code block (fences included).
    inside: bool,
    /// For a fence that opens a block: the block's first include argument,
    /// and whether it is a runnable example.
    first_include: Option<(&'a str, bool)>,
}

fn scan(content: &str) -> Vec<Scanned<'_>> {
    let lines: Vec<&str> = content.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    let mut inside = false;
    for (i, text) in lines.iter().enumerate() {
        let line = classify(text);
        let is_fence = matches!(line, Line::Fence);
        let first_include = if is_fence && !inside {
            lines[i + 1..]
                .iter()
                .map(|l| classify(l))
                .take_while(|l| !matches!(l, Line::Fence))
                .find_map(|l| match l {
                    Line::Include { arg, runnable } => Some((arg, runnable)),
                    _ => None,
                })
        } else {
            None
        };
        let was_inside = inside;
        if is_fence {
            inside = !inside;
        }
        out.push(Scanned {
            text,
            line,
            inside: was_inside || inside,
            first_include,
        });
    }
    out
}

/// The anchor of an include argument `path:anchor`, if it has one.
fn split_include(arg: &str) -> (&str, Option<&str>) {
    match arg.split_once(':') {
        Some((path, anchor)) => (path.trim(), Some(anchor.trim())),
        None => (arg.trim(), None),
    }
}

fn number_items(
    chapters: &[Chapter],
    src: &Path,
    registry: &dyn Registry,
    errors: &mut Vec<String>,
) -> Index {
    let mut index = Index::new();
    for (i, ch) in chapters.iter().enumerate() {
        let mut counts: HashMap<Kind, usize> = HashMap::new();
        let mut add = |kind: Kind, key: &str, errors: &mut Vec<String>| {
            let n = counts.entry(kind).or_insert(0);
            *n += 1;
            let entry = index.entry((kind, key.to_string())).or_default();
            if entry.iter().any(|(c, _)| *c == i) {
                errors.push(format!(
                    "{}: {} `{key}` is shown twice in one chapter",
                    ch.path,
                    kind.word().to_lowercase()
                ));
            }
            entry.push((i, format!("{} {}.{n}", kind.word(), ch.label)));
        };
        for s in scan(&ch.content) {
            if let Some((arg, _)) = s.first_include {
                let (path, anchor) = split_include(arg);
                match anchor {
                    Some(anchor) => match check_anchor(src, &ch.path, path, anchor) {
                        Ok(_) => add(Kind::Listing, anchor, errors),
                        Err(e) => errors.push(format!("{}: {e}", ch.path)),
                    },
                    None => errors.push(format!(
                        "{}: `{arg}` includes a whole file; include a listing by \
                         its anchor, path:anchor",
                        ch.path
                    )),
                }
            }
            if let (Line::Block { kind, name }, false) = (s.line, s.inside) {
                let known = match kind {
                    Kind::Figure => registry.figure_names(),
                    _ => registry.output_names(),
                };
                if known.contains(&name) {
                    add(kind, name, errors);
                } else {
                    errors.push(format!(
                        "{}: unknown {} `{name}`; known {}s: {}",
                        ch.path,
                        kind.word().to_lowercase(),
                        kind.word().to_lowercase(),
                        known.join(", ")
                    ));
                }
            }
        }
    }
    index
}

/// Check that `path` (relative to the chapter) has a non-empty anchor.
/// Returns the file's path relative to the book's root, for the caption.
fn check_anchor(
    src: &Path,
    chapter: &str,
    path: &str,
    anchor: &str,
) -> Result<String, String> {
    if anchor.is_empty()
        || anchor.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        return Err(format!(
            "`{path}:{anchor}`: include a listing by its anchor name, not by \
             line numbers"
        ));
    }
    let chapter_dir = Path::new(chapter).parent().unwrap_or(Path::new(""));
    let file = normalize(&src.join(chapter_dir).join(path));
    let text = std::fs::read_to_string(&file).map_err(|e| {
        format!("`{path}`: cannot read {}: {e}", file.display())
    })?;
    let marker = |line: &str, tag: &str| {
        line.split_once(tag).map(|(_, rest)| {
            rest.trim()
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                .next()
                .unwrap_or_default()
                .to_string()
        })
    };
    let mut body: Option<Vec<&str>> = None;
    let mut closed = false;
    let mut anchors = Vec::new();
    for line in text.lines() {
        if let Some(name) = marker(line, "ANCHOR_END:") {
            if name == anchor && body.is_some() {
                closed = true;
                break;
            }
        } else if let Some(name) = marker(line, "ANCHOR:") {
            if name == anchor {
                body = Some(Vec::new());
            } else {
                anchors.push(name);
            }
        } else if let Some(b) = body.as_mut() {
            b.push(line);
        }
    }
    let shown = display_path(src, &file);
    match body {
        None => Err(format!(
            "`{path}:{anchor}`: no `ANCHOR: {anchor}` in {shown}; its anchors: {}",
            if anchors.is_empty() {
                "none".to_string()
            } else {
                anchors.join(", ")
            }
        )),
        Some(_) if !closed => Err(format!(
            "`{path}:{anchor}`: `ANCHOR: {anchor}` in {shown} has no `ANCHOR_END: {anchor}`"
        )),
        Some(b) if b.iter().all(|l| l.trim().is_empty()) => Err(format!(
            "`{path}:{anchor}`: the anchor `{anchor}` in {shown} encloses no code"
        )),
        Some(_) => Ok(shown),
    }
}

/// `a/b/../c` → `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A file's path as the reader should see it: relative to the book's root
/// (the folder that holds `src/`).
fn display_path(src: &Path, file: &Path) -> String {
    let root = normalize(&src.join(".."));
    file.strip_prefix(&root)
        .unwrap_or(file)
        .display()
        .to_string()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The label of `(kind, key)` as shown in chapter `here`: its own if the
/// chapter shows it, else the first chapter that does.
fn lookup<'a>(
    index: &'a Index,
    kind: Kind,
    key: &str,
    here: usize,
) -> Option<&'a (usize, String)> {
    let all = index.get(&(kind, key.to_string()))?;
    all.iter().find(|(c, _)| *c == here).or_else(|| all.first())
}

/// Every figure and output the book shows, made once each.
struct Made {
    figures: HashMap<String, FigureData>,
    outputs: HashMap<String, String>,
}

/// Run the experiments behind every figure and output the book shows,
/// once each, on every core: they are independent, and together they are
/// most of the build's time.
fn make_all(index: &Index, registry: &dyn Registry) -> Made {
    let jobs: Vec<&(Kind, String)> = index
        .keys()
        .filter(|(kind, _)| *kind != Kind::Listing)
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Made {
        figures: HashMap::new(),
        outputs: HashMap::new(),
    });
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads.min(jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i =
                        next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((kind, name)) = jobs.get(i).map(|j| (j.0, &j.1))
                    else {
                        break;
                    };
                    if kind == Kind::Figure {
                        if let Some(fig) = registry.figure(name) {
                            let mut made =
                                done.lock().expect("no job panicked");
                            made.figures.insert(name.clone(), fig);
                        }
                    } else if let Some(text) = registry.output(name) {
                        let mut made = done.lock().expect("no job panicked");
                        made.outputs.insert(name.clone(), text);
                    }
                }
            });
        }
    });
    done.into_inner().expect("no job panicked")
}

#[allow(clippy::too_many_arguments)]
fn expand(
    mode: Mode,
    here: usize,
    ch: &Chapter,
    paths: &[String],
    index: &Index,
    src: &Path,
    made: &Made,
    errors: &mut Vec<String>,
) -> String {
    let mut out = String::with_capacity(ch.content.len());
    for s in scan(&ch.content) {
        if let Some((arg, runnable)) = s.first_include {
            if let (_, Some(anchor)) = split_include(arg) {
                listing_caption(&mut out, here, ch, index, src, arg, anchor);
            }
            if mode == Mode::Test && !runnable {
                // A listing is a fragment of the library, tested by
                // `cargo test`; rustdoc cannot compile it on its own.
                out.push_str(s.text.trim_end());
                out.push_str(",ignore\n");
                continue;
            }
        }
        match s.line {
            Line::Block { kind, name } if !s.inside => {
                let Some((_, label)) = lookup(index, kind, name, here) else {
                    continue; // unknown: reported while numbering
                };
                if kind == Kind::Figure {
                    if let Some(fig) = made.figures.get(name) {
                        figure_html(&mut out, name, label, fig);
                    }
                } else if let Some(text) = made.outputs.get(name) {
                    output_block(&mut out, name, label, text);
                }
            }
            _ if s.inside => {
                out.push_str(s.text);
                out.push('\n');
            }
            _ => {
                for tag in ["{{#figure", "{{#output"] {
                    if find_unescaped(s.text, tag).is_some() {
                        errors.push(format!(
                            "{}: `{}` must stand alone on its line as \
                             {tag} NAME}}}}",
                            ch.path,
                            s.text.trim()
                        ));
                    }
                }
                out.push_str(&expand_refs(
                    s.text, here, ch, paths, index, errors,
                ));
                out.push('\n');
            }
        }
    }
    out
}

fn listing_caption(
    out: &mut String,
    here: usize,
    ch: &Chapter,
    index: &Index,
    src: &Path,
    arg: &str,
    anchor: &str,
) {
    let (path, _) = split_include(arg);
    let (Some((_, label)), Ok(file)) = (
        lookup(index, Kind::Listing, anchor, here),
        check_anchor(src, &ch.path, path, anchor),
    ) else {
        return; // reported while numbering
    };
    let id = Kind::Listing.id(anchor);
    let _ = writeln!(
        out,
        "<p class=\"listing-caption\" id=\"{id}\"><a class=\"caption-label\" \
         href=\"#{id}\">{label}</a>: <code>{anchor}</code> \
         <span class=\"listing-source\">({})</span></p>\n",
        escape(&file)
    );
}

fn figure_html(out: &mut String, name: &str, label: &str, fig: &FigureData) {
    let id = Kind::Figure.id(name);
    let svg = fig.svg.trim().replace("\n\n", "\n");
    let svg = svg.replacen(
        "<svg ",
        &format!("<svg role=\"img\" aria-labelledby=\"{id}-title\" "),
        1,
    );
    let svg = match svg.find('>') {
        Some(end) => format!(
            "{}><title id=\"{id}-title\">{}</title>{}",
            &svg[..end],
            escape(&fig.alt),
            &svg[end + 1..]
        ),
        None => svg,
    };
    let _ = writeln!(
        out,
        "<figure id=\"{id}\" class=\"book-figure\">\n{svg}\n\
         <figcaption><a class=\"caption-label\" href=\"#{id}\">{label}</a>: \
         {}</figcaption>\n</figure>\n",
        escape(&fig.caption)
    );
}

fn output_block(out: &mut String, name: &str, label: &str, text: &str) {
    let id = Kind::Output.id(name);
    let _ = writeln!(
        out,
        "<p class=\"output-caption\" id=\"{id}\"><a class=\"caption-label\" \
         href=\"#{id}\">{label}</a>: what <code>{name}</code> prints</p>\n\n\
         ```text\n{}\n```\n",
        text.trim_end()
    );
}

/// Replace every `{{#ref kind:key}}` in a line of prose with a link.
fn expand_refs(
    text: &str,
    here: usize,
    ch: &Chapter,
    paths: &[String],
    index: &Index,
    errors: &mut Vec<String>,
) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = find_unescaped(rest, "{{#ref") {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let Some(end) = after.find("}}") else {
            errors.push(format!("{}: unclosed `{after}`", ch.path));
            return out + after;
        };
        let arg = after["{{#ref".len()..end].trim();
        match arg.split_once(':').and_then(|(k, key)| Some((Kind::parse(k)?, key))) {
            Some((kind, key)) => match lookup(index, kind, key, here) {
                Some((target, label)) => {
                    let page = if *target == here {
                        String::new()
                    } else {
                        relative(&ch.path, &paths[*target])
                    };
                    let _ = write!(out, "[{label}]({page}#{})", kind.id(key));
                }
                None => errors.push(format!(
                    "{}: `{{{{#ref {arg}}}}}` points at no {} shown in the book",
                    ch.path,
                    kind.word().to_lowercase()
                )),
            },
            None => errors.push(format!(
                "{}: `{{{{#ref {arg}}}}}` should read {{{{#ref figure:NAME}}}}, \
                 {{{{#ref listing:ANCHOR}}}} or {{{{#ref output:NAME}}}}",
                ch.path
            )),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// The path of chapter `to` as a link from chapter `from` (both relative
/// to `src/`).
fn relative(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = from.split('/').collect();
    let from_dir = &from_dir[..from_dir.len() - 1];
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dir
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts = vec![".."; from_dir.len() - common];
    parts.extend(&to_parts[common..]);
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Fake;

    impl Registry for Fake {
        fn figure(&self, name: &str) -> Option<FigureData> {
            (name == "heat").then(|| FigureData {
                caption: "Weights <by> row".into(),
                alt: "a grid".into(),
                svg: "<svg viewBox=\"0 0 1 1\">\n<rect/>\n</svg>".into(),
            })
        }
        fn figure_names(&self) -> Vec<&'static str> {
            vec!["heat"]
        }
        fn output(&self, name: &str) -> Option<String> {
            (name == "shapes").then(|| "Q: (12, 8)\n".into())
        }
        fn output_names(&self) -> Vec<&'static str> {
            vec!["shapes"]
        }
    }

    /// A scratch `src/` with one listings file, unique per test.
    fn scratch(test: &str) -> PathBuf {
        let root = std::env::temp_dir()
            .join(format!("mdbook-listings-{}-{test}", std::process::id()));
        let src = root.join("src");
        std::fs::create_dir_all(src.join("part")).unwrap();
        std::fs::create_dir_all(root.join("code")).unwrap();
        std::fs::write(
            root.join("code/lib.rs"),
            "// ANCHOR: add\npub fn add() {}\n// ANCHOR_END: add\n\
             // ANCHOR: empty\n\n// ANCHOR_END: empty\n\
             // ANCHOR: main\nfn main() {}\n// ANCHOR_END: main\n",
        )
        .unwrap();
        src
    }

    fn chapter(name: &str, path: &str, number: Value, content: &str) -> Value {
        json!({"Chapter": {
            "name": name, "content": content, "number": number,
            "sub_items": [], "path": path, "source_path": path,
            "parent_names": []
        }})
    }

    fn run(src: &Path, items: Vec<Value>) -> Result<Vec<String>, Vec<String>> {
        let mut book = json!({ "items": items });
        process(&mut book, src, &Fake, Mode::Render)?;
        Ok(book["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i.get("Chapter"))
            .map(|c| c["content"].as_str().unwrap().to_string())
            .collect())
    }

    const LISTING: &str = "```rust\n{{#include ../../code/lib.rs:add}}\n```\n";

    #[test]
    fn items_are_numbered_by_chapter_with_ids() {
        let src = scratch("numbered");
        let body = format!(
            "{LISTING}\n{{{{#figure heat}}}}\n\n{{{{#output shapes}}}}\n"
        );
        let out = run(
            &src,
            vec![
                chapter("Intro", "intro.md", Value::Null, "# Intro\n"),
                chapter("Two", "part/two.md", json!([2]), &body),
                chapter(
                    "App",
                    "app.md",
                    Value::Null,
                    &LISTING.replace("../../", "../"),
                ),
            ],
        )
        .unwrap();
        let two = &out[1];
        assert!(two.contains("id=\"listing-add\""), "{two}");
        assert!(two.contains(">Listing 2.1</a>: <code>add</code>"), "{two}");
        assert!(two.contains("(code/lib.rs)"), "{two}");
        assert!(two.contains("<figure id=\"figure-heat\""), "{two}");
        assert!(
            two.contains(">Figure 2.1</a>: Weights &lt;by&gt; row"),
            "{two}"
        );
        assert!(two.contains("role=\"img\""), "{two}");
        assert!(two.contains("<title id=\"figure-heat-title\">a grid</title>"));
        assert!(two.contains(">Output 2.1</a>"), "{two}");
        assert!(two.contains("```text\nQ: (12, 8)\n```"), "{two}");
        assert!(out[2].contains(">Listing A.1</a>"), "{}", out[2]);
    }

    #[test]
    fn under_mdbook_test_listings_are_ignored_and_examples_run() {
        let src = scratch("testmode");
        let body = "```rust,noplayground\n{{#include ../code/lib.rs:add}}\n```\n\
                    ```rust\n{{#rustdoc_include ../code/lib.rs:main}}\n```\n";
        let mut book =
            json!({ "items": [chapter("One", "one.md", json!([1]), body)] });
        process(&mut book, &src, &Fake, Mode::Test).unwrap();
        let out = book["items"][0]["Chapter"]["content"].as_str().unwrap();
        assert!(
            out.contains("```rust,noplayground,ignore\n{{#include"),
            "{out}"
        );
        assert!(out.contains("```rust\n{{#rustdoc_include"), "{out}");
    }

    #[test]
    fn unknown_figure_or_output_fails_and_lists_the_known_names() {
        let src = scratch("unknown");
        let errors = run(
            &src,
            vec![chapter(
                "One",
                "one.md",
                json!([1]),
                "{{#figure hat}}\n\n{{#output shape}}\n",
            )],
        )
        .unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(
            errors[0].contains("unknown figure `hat`; known figures: heat")
        );
        assert!(
            errors[1].contains("unknown output `shape`; known outputs: shapes")
        );
    }

    #[test]
    fn missing_or_empty_anchor_fails_and_names_the_file() {
        let src = scratch("anchors");
        let body = "```rust\n{{#include ../code/lib.rs:ad}}\n```\n\n\
                    ```rust\n{{#include ../code/lib.rs:empty}}\n```\n\n\
                    ```rust\n{{#include ../code/lib.rs}}\n```\n\n\
                    ```rust\n{{#include ../code/nope.rs:add}}\n```\n";
        let errors =
            run(&src, vec![chapter("One", "one.md", json!([1]), body)])
                .unwrap_err();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0]
                .contains("no `ANCHOR: ad` in code/lib.rs; its anchors: add")
        );
        assert!(errors[1].contains("encloses no code"));
        assert!(errors[2].contains("includes a whole file"));
        assert!(errors[3].contains("cannot read"));
    }

    #[test]
    fn references_link_within_and_across_chapters() {
        let src = scratch("refs");
        let one = "See {{#ref figure:heat}}.\n\n{{#figure heat}}\n";
        let two = "As {{#ref figure:heat}} and {{#ref listing:add}} show.\n\
                   ```rust\n{{#include ../../code/lib.rs:add}}\n```\n";
        let out = run(
            &src,
            vec![
                chapter("One", "one.md", json!([1]), one),
                chapter("Two", "part/two.md", json!([2]), two),
            ],
        )
        .unwrap();
        assert!(
            out[0].contains("See [Figure 1.1](#figure-heat)."),
            "{}",
            out[0]
        );
        assert!(
            out[1].contains("As [Figure 1.1](../one.md#figure-heat) and [Listing 2.1](#listing-add) show."),
            "{}",
            out[1]
        );
    }

    #[test]
    fn bad_references_fail() {
        let src = scratch("badrefs");
        let body = "{{#ref figure:nope}} {{#ref table:x}}\n";
        let errors =
            run(&src, vec![chapter("One", "one.md", json!([1]), body)])
                .unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("points at no figure"));
        assert!(errors[1].contains("should read"));
    }

    #[test]
    fn directives_inside_code_blocks_are_left_alone() {
        let src = scratch("fenced");
        let body = "```text\n{{#figure nothing}}\n{{#ref figure:x}}\n```\n";
        let out = run(&src, vec![chapter("One", "one.md", json!([1]), body)])
            .unwrap();
        assert_eq!(out[0], body);
    }

    #[test]
    fn escaped_directives_are_left_for_mdbook_to_unescape() {
        let src = scratch("escaped");
        let body = "Write `\\{{#output NAME}}` or \\{{#ref figure:X}}.\n\
                    ```text\n\\{{#include ../code/lib.rs:nope}}\n```\n";
        let out = run(&src, vec![chapter("One", "one.md", json!([1]), body)])
            .unwrap();
        assert_eq!(out[0], body);
    }

    #[test]
    fn a_directive_sharing_its_line_fails() {
        let src = scratch("inline");
        let body = "Look: {{#figure heat}}\n";
        let errors =
            run(&src, vec![chapter("One", "one.md", json!([1]), body)])
                .unwrap_err();
        assert!(errors[0].contains("must stand alone"), "{errors:?}");
    }

    #[test]
    fn relative_links_climb_out_of_folders() {
        assert_eq!(relative("m3/a.md", "m3/b.md"), "b.md");
        assert_eq!(relative("m3/a.md", "app/n.md"), "../app/n.md");
        assert_eq!(relative("intro.md", "m3/b.md"), "m3/b.md");
    }
}
