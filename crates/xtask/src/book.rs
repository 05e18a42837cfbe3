//! Building the book, and the checks that turn silent damage into a failed
//! build: KaTeX errors, raw math left in a page, empty code blocks, figures
//! without a drawing, links to a CDN.

use crate::{Failure, run, run_echo, step};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Build the book rooted at `root` into `root/book` and check every page.
/// Returns the number of pages checked.
pub fn build(root: &Path) -> Result<usize, Failure> {
    step(&format!("mdbook build {}", root.display()));
    let out = Command::new("mdbook")
        .arg("build")
        .arg(root)
        .output()
        .map_err(|e| Failure(format!("could not start mdbook: {e}")))?;
    let log = String::from_utf8_lossy(&out.stderr);
    eprint!("{log}");
    if !out.status.success() {
        return Err(Failure(format!(
            "mdbook build failed; the messages above say why{}",
            listings_errors(&log)
        )));
    }
    let katex: Vec<&str> = log
        .lines()
        .filter(|l| {
            l.contains("Rendering failed") || l.contains("rendering failure")
        })
        .collect();
    if !katex.is_empty() {
        return Err(Failure(format!(
            "KaTeX could not render some math (mdbook-katex left it raw):\n{}",
            katex.join("\n")
        )));
    }
    let pages = html_pages(&root.join("book"))?;
    let mut problems = Vec::new();
    for page in &pages {
        let html = fs::read_to_string(page)?;
        let name = page.strip_prefix(root).unwrap_or(page).display();
        problems.extend(
            check_page(&html)
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    if problems.is_empty() {
        Ok(pages.len())
    } else {
        Err(Failure(format!(
            "the built book has problems:\n{}",
            problems.join("\n")
        )))
    }
}

fn listings_errors(log: &str) -> String {
    let lines: Vec<&str> =
        log.lines().filter(|l| l.contains("[listings]")).collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!(":\n{}", lines.join("\n"))
    }
}

/// Every `.html` file under `dir`, sorted.
fn html_pages(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut pages = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    Ok(pages)
}

/// What is wrong with one built page, if anything.
pub fn check_page(html: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let prose = outside_code(html);
    if prose.contains("class=\"katex-error\"") {
        problems
            .push("KaTeX rendered an error (class katex-error)".to_string());
    }
    for raw in ["$$", "\\(", "\\["] {
        if prose.contains(raw) {
            problems.push(format!("raw math `{raw}` left unrendered"));
        }
    }
    for cdn in ["cdn.jsdelivr", "cdnjs.", "unpkg.com", "fonts.googleapis"] {
        if html.contains(cdn) {
            problems
                .push(format!("the page loads something from a CDN ({cdn})"));
        }
    }
    if html.contains("\"></code>") && html.contains("<code class=\"language-") {
        let empty = html
            .match_indices("<code class=\"language-")
            .filter(|(i, _)| {
                let rest = &html[*i..];
                rest.find('>')
                    .is_some_and(|end| rest[end + 1..].starts_with("</code>"))
            })
            .count();
        if empty > 0 {
            problems.push(format!(
                "{empty} empty code block(s): an include found nothing"
            ));
        }
    }
    for (i, _) in html.match_indices("<figure") {
        let figure = &html[i..];
        let end = figure.find("</figure>").unwrap_or(figure.len());
        let figure = &figure[..end];
        if !figure.contains("<svg") || !figure.contains("<figcaption") {
            problems
                .push("a figure without a drawing or a caption".to_string());
        }
    }
    problems
}

/// The page with every `<pre>` and `<code>` element removed, so that a `$$`
/// inside a code listing is not taken for unrendered math.
fn outside_code(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    loop {
        let next = ["<pre", "<code", "<script", "<style"]
            .iter()
            .filter_map(|tag| rest.find(tag).map(|i| (i, *tag)))
            .min();
        let Some((start, tag)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..start]);
        let close = format!("</{}>", &tag[1..]);
        match rest[start..].find(&close) {
            Some(end) => rest = &rest[start + end + close.len()..],
            None => return out,
        }
    }
}

/// `mdbook test` of the book at `root`: compile and run every Rust block in
/// it against this workspace's `listings` crate. rustdoc needs exactly one build of each crate on its
/// library path, so `listings` is built into a target folder of its own and
/// older builds of the same crates are removed from it.
pub fn mdbook_test(root: &Path) -> Result<(), Failure> {
    step("mdbook test (every Rust block in the book, against `listings`)");
    let workspace = crate::root();
    let target = workspace.join("target/book-deps");
    let target_arg = target.to_string_lossy().into_owned();
    run(
        "cargo",
        &[
            "build",
            "--quiet",
            "--package",
            "listings",
            "--target-dir",
            &target_arg,
        ],
        &workspace,
    )?;
    let deps = target.join("debug/deps");
    remove_stale_builds(&deps)?;
    let deps_arg = deps.to_string_lossy().into_owned();
    let root_arg = root.to_string_lossy().into_owned();
    run_echo("mdbook", &["test", &root_arg, "-L", &deps_arg], root)
}

/// In a cargo `deps` folder, keep only the newest `lib<name>-<hash>.rlib`
/// (and `.rmeta`) of each crate name.
fn remove_stale_builds(deps: &Path) -> Result<(), Failure> {
    let mut newest: std::collections::HashMap<
        String,
        (std::time::SystemTime, String),
    > = Default::default();
    let mut libs = Vec::new();
    for entry in fs::read_dir(deps)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let Some(stem) = name.strip_suffix(".rlib") else {
            continue;
        };
        let Some((krate, hash)) = stem.rsplit_once('-') else {
            continue;
        };
        let modified = fs::metadata(&path)?.modified()?;
        let entry = newest
            .entry(krate.to_string())
            .or_insert((modified, hash.to_string()));
        if modified > entry.0 {
            *entry = (modified, hash.to_string());
        }
        libs.push((krate.to_string(), hash.to_string()));
    }
    for (krate, hash) in libs {
        if newest[&krate].1 != hash {
            for ext in ["rlib", "rmeta"] {
                let _ =
                    fs::remove_file(deps.join(format!("{krate}-{hash}.{ext}")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_page_has_no_problems() {
        let html = "<p><span class=\"katex\">x</span></p>\
                    <p>the class <code>katex-error</code> marks errors</p>\
                    <pre><code class=\"language-rust\">let a = \"$$\";</code></pre>\
                    <figure><svg></svg><figcaption>Figure 1.1</figcaption></figure>";
        assert_eq!(check_page(html), Vec::<String>::new());
    }

    #[test]
    fn each_kind_of_damage_is_reported() {
        let cases = [
            ("<span class=\"katex-error\">\\frac</span>", "katex-error"),
            ("<p>$$x^2$$</p>", "raw math `$$`"),
            ("<p>\\(x\\)</p>", "raw math `\\(`"),
            ("<link href=\"https://cdn.jsdelivr.net/katex.css\">", "CDN"),
            (
                "<pre><code class=\"language-rust\"></code></pre>",
                "empty code block",
            ),
            (
                "<figure><figcaption>F</figcaption></figure>",
                "without a drawing",
            ),
            ("<figure><svg></svg></figure>", "or a caption"),
        ];
        for (html, expected) in cases {
            let problems = check_page(html);
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{html}: {problems:?}"
            );
        }
    }
}
