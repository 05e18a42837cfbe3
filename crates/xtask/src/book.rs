//! Building the book: `mdbook build` with the checks that turn silent
//! damage into a failed build, and `mdbook test` of its code blocks. The
//! checks themselves live by what they read: [`markdown`](crate::markdown)
//! reads the chapters' sources before mdBook does, [`page`](crate::page)
//! each page it built, and [`links`](crate::links) every link between them.

use crate::markdown::{
    MAX_ANSWER_WORDS, accidental_lists, collapsed_answers, control_characters,
};
use crate::page::{check_page, included_blocks_have_captions};
use crate::{Failure, links, run, run_echo, step};
use mdbook_listings::verify::RECORD_VAR;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which of the build's checks of the prose fail it rather than only
/// report (see [`prose::ENFORCE`](crate::prose::ENFORCE) and
/// [`notation::ENFORCE`](crate::notation::ENFORCE)).
#[derive(Debug, Clone, Copy)]
pub struct Enforce {
    pub prose: bool,
    pub notation: bool,
}

impl Enforce {
    /// What the book's build enforces today.
    pub const BOOK: Enforce = Enforce {
        prose: crate::prose::ENFORCE,
        notation: crate::notation::ENFORCE,
    };
    /// Every check enforced (the checks' own tests).
    pub const ALL: Enforce = Enforce {
        prose: true,
        notation: true,
    };
}

/// Build the book rooted at `root` into `root/book` and check every page.
/// Returns the number of pages checked.
pub fn build(root: &Path) -> Result<usize, Failure> {
    build_with(root, Enforce::BOOK)
}

/// [`build`], with the record of the test run just made (see
/// [`record`](crate::record)): the claim marks and the verification report
/// show its results, and a marked test that failed in it fails the build.
pub fn build_recorded(root: &Path, record: &Path) -> Result<usize, Failure> {
    build_inner(root, Enforce::BOOK, Some(record))
}

/// [`build`], with the prose checks enforced as `enforce` says.
pub fn build_with(root: &Path, enforce: Enforce) -> Result<usize, Failure> {
    build_inner(root, enforce, None)
}

/// The build; without a record, every claim mark says its tests were not
/// run in this build.
fn build_inner(
    root: &Path,
    enforce: Enforce,
    record: Option<&Path>,
) -> Result<usize, Failure> {
    let mut clock = Phases::start();
    let controls = control_characters(root)?;
    if !controls.is_empty() {
        return Err(Failure(format!(
            "a chapter holds control characters, which render wrong but \
             parse (a TAB where `\\top` was typed, say):\n{}",
            controls.join("\n")
        )));
    }
    let answers = collapsed_answers(root)?;
    if !answers.is_empty() {
        return Err(Failure(format!(
            "a collapsed answer hides what the reader needs: an answer \
             (<details>) holds at most {MAX_ANSWER_WORDS} words of prose and \
             no listing, figure or output; make the rest main text:\n{}",
            answers.join("\n")
        )));
    }
    let lists = accidental_lists(root)?;
    if !lists.is_empty() {
        return Err(Failure(format!(
            "a line inside a paragraph starts like a list item, so Markdown \
             turns it into a list (and swallows its number or dash); reflow \
             the paragraph so the line starts with a word, or put a blank \
             line before a list meant as one:\n{}",
            lists.join("\n")
        )));
    }
    crate::prose::check(root, enforce.prose)?;
    crate::notation::check(root, enforce.notation)?;
    let repository = repository_overrides(
        std::env::var("BOOK_REPOSITORY").ok().as_deref(),
        std::env::var("BOOK_BRANCH").ok().as_deref(),
    )?;
    clock.lap("the chapters' own checks");
    let try_it = try_it_outputs(root)?;
    clock.lap("the Try-it examples");
    step(&format!("mdbook build {}", root.display()));
    let mut mdbook = Command::new("mdbook");
    mdbook.arg("build").arg(root).envs(repository);
    if let Some(dir) = &try_it {
        mdbook.env(mdbook_listings::TRY_IT_VAR, dir);
    }
    match record {
        Some(record) => mdbook.env(RECORD_VAR, record),
        None => mdbook.env_remove(RECORD_VAR),
    };
    let out = mdbook
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
    if log.contains("error: could not compile") {
        // mdBook asks a preprocessor whether it supports the renderer and
        // silently skips it when the command fails, so a listings crate
        // that does not compile would leave every directive unexpanded.
        return Err(Failure(
            "the listings preprocessor (or a crate it runs) did not compile, \
             so mdBook skipped it; the compiler's messages are above"
                .to_string(),
        ));
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
    // mdBook warns when a chapter's Markdown mangles its inline HTML (say,
    // emphasis opened in one formula and closed in another).
    let mangled: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("unexpected HTML"))
        .collect();
    if !mangled.is_empty() {
        return Err(Failure(format!(
            "Markdown broke the HTML of some chapter:\n{}",
            mangled.join("\n")
        )));
    }
    clock.lap("mdbook build (the preprocessors and KaTeX)");
    crate::search::readable(root)?;
    clock.lap("the search index");
    rustdoc_sources(root)?;
    clock.lap("the source view");
    let pages = check_built(root)?;
    clock.lap("the checks of the built pages");
    println!("{}", clock.report());
    Ok(pages)
}

/// Where a build's time went, phase by phase.
struct Phases {
    last: std::time::Instant,
    laps: Vec<(&'static str, f64)>,
}

impl Phases {
    fn start() -> Self {
        Phases {
            last: std::time::Instant::now(),
            laps: Vec::new(),
        }
    }

    /// The phase `name` ended now.
    fn lap(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.laps.push((name, (now - self.last).as_secs_f64()));
        self.last = now;
    }

    /// "where the time went: A 0.1 s, B 8.0 s; 8.1 s in all".
    fn report(&self) -> String {
        let each: Vec<String> = self
            .laps
            .iter()
            .map(|(name, s)| format!("{name} {s:.1} s"))
            .collect();
        let all: f64 = self.laps.iter().map(|l| l.1).sum();
        format!(
            "where the time went: {}; {all:.1} s in all",
            each.join(", ")
        )
    }
}

/// Run every example of `listings` that a chapter shows in a block
/// (`{{#rustdoc_include ...listings/examples/NAME.rs...}}`) and keep what
/// it prints in `target/try-it/NAME.txt`, for the book to show under the
/// block. The folder, or None if no chapter shows an example.
pub fn try_it_outputs(root: &Path) -> Result<Option<PathBuf>, Failure> {
    let mut examples = std::collections::BTreeSet::new();
    for path in crate::links::all_files(&root.join("src"))? {
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        for line in fs::read_to_string(&path)?.lines() {
            let Some(rest) = line.trim().strip_prefix("{{#rustdoc_include ")
            else {
                continue;
            };
            let Some(at) = rest.find("listings/examples/") else {
                continue;
            };
            let file = &rest[at + "listings/examples/".len()..];
            if let Some(name) = file.split(".rs").next() {
                examples.insert(name.to_string());
            }
        }
    }
    if examples.is_empty() {
        return Ok(None);
    }
    let workspace = crate::root();
    let dir = workspace.join("target/try-it");
    fs::create_dir_all(&dir)?;
    step(&format!(
        "what the Try-it examples print: {}",
        examples.iter().cloned().collect::<Vec<_>>().join(", ")
    ));
    for name in &examples {
        let out = Command::new("cargo")
            .args(["run", "--quiet", "--package", "listings", "--example"])
            .arg(name)
            .current_dir(&workspace)
            .output()
            .map_err(|e| Failure(format!("could not start cargo: {e}")))?;
        if !out.status.success() {
            return Err(Failure(format!(
                "the example {name} failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        fs::write(dir.join(format!("{name}.txt")), &out.stdout)?;
    }
    Ok(Some(dir))
}

/// Where the book's pages link for the source of the crate `listings`.
const RUSTDOC: &str = "rustdoc";

/// The source view the pages link to: rustdoc's pages of the crate
/// `listings` (with its tests, `--cfg test`), built from this checkout and
/// copied under the book's output as `rustdoc/`, with rustdoc's own files
/// beside them. Only for a book whose pages link there.
fn rustdoc_sources(root: &Path) -> Result<(), Failure> {
    let book = root.join("book");
    let wanted = html_pages(&book)?.iter().any(|p| {
        fs::read_to_string(p)
            .is_ok_and(|h| h.contains(mdbook_listings::claim::RUSTDOC))
    });
    if !wanted {
        return Ok(());
    }
    step(
        "cargo doc -p listings --no-deps --document-private-items (with \
         --cfg test): the source view the pages link to",
    );
    let workspace = crate::root();
    let out = Command::new("cargo")
        .args([
            "doc",
            "--quiet",
            "--package",
            "listings",
            "--no-deps",
            "--document-private-items",
        ])
        .env("RUSTDOCFLAGS", "--cfg test")
        .current_dir(&workspace)
        .output()
        .map_err(|e| Failure(format!("could not start cargo doc: {e}")))?;
    if !out.status.success() {
        return Err(Failure(format!(
            "cargo doc failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let doc = workspace.join("target/doc");
    let into = book.join(RUSTDOC);
    let _ = fs::remove_dir_all(&into);
    copy_dir(&doc.join("src/listings"), &into.join("src/listings"))?;
    copy_dir(&doc.join("static.files"), &into.join("static.files"))?;
    for entry in fs::read_dir(&doc)? {
        let path = entry?.path();
        if path.is_file() {
            fs::copy(&path, into.join(path.file_name().unwrap_or_default()))?;
        }
    }
    Ok(())
}

/// Copy the folder `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) -> Result<(), Failure> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let path = entry?.path();
        let target = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            copy_dir(&path, &target)?;
        } else {
            fs::copy(&path, &target)?;
        }
    }
    Ok(())
}

/// Every link of the book's pages into the rustdoc source view must reach
/// a page there and a line of it.
pub fn source_links(book: &Path) -> Result<Vec<String>, Failure> {
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in html_pages(book)? {
        let html = fs::read_to_string(&page)?;
        let name = page.strip_prefix(book).unwrap_or(&page).display();
        for (at, _) in html.match_indices("href=\"") {
            let rest = &html[at + 6..];
            let link = &rest[..rest.find('"').unwrap_or(0)];
            if !link.contains(mdbook_listings::claim::RUSTDOC) {
                continue;
            }
            checked += 1;
            let (file, line) = link.split_once('#').unwrap_or((link, ""));
            let target = page.parent().unwrap_or(book).join(file);
            let Ok(source) = fs::read_to_string(&target) else {
                problems.push(format!(
                    "book/{name}: source link {link}: no such page (did \
                     cargo doc run?)"
                ));
                continue;
            };
            if line.is_empty()
                || !(source.contains(&format!(" id={line} "))
                    || source.contains(&format!(" id=\"{line}\"")))
            {
                problems.push(format!(
                    "book/{name}: source link {link}: no line {line} there"
                ));
            }
        }
    }
    if checked > 0 {
        println!("checked {checked} links into the source view");
    }
    Ok(problems)
}

/// Check the book already built in `root/book`: every page on its own,
/// every link and anchor, and a caption on every code block that
/// includes a listing. Returns the number of pages checked.
pub fn check_built(root: &Path) -> Result<usize, Failure> {
    let book = root.join("book");
    let pages = html_pages(&book)?;
    let mut problems = source_links(&book)?;
    for page in &pages {
        let html = fs::read_to_string(page)?;
        let name = page.strip_prefix(root).unwrap_or(page).display();
        problems.extend(
            check_page(&html)
                .into_iter()
                .map(|p| format!("{name}: {p}")),
        );
    }
    let links = links::check(&book)?;
    problems.extend(links.problems.iter().map(|p| format!("book/{p}")));
    problems.extend(included_blocks_have_captions(root)?);
    if problems.is_empty() {
        println!(
            "checked {} pages and {} internal links and anchors",
            pages.len(),
            links.checked
        );
        Ok(pages.len())
    } else {
        Err(Failure(format!(
            "the built book has problems:\n{}",
            problems.join("\n")
        )))
    }
}

/// mdBook's overrides for the repository and edit icons, from the
/// repository's address (`BOOK_REPOSITORY`) and branch (`BOOK_BRANCH`,
/// `main` if unset): none without an address, so that a build that knows
/// no repository shows no icon rather than a placeholder.
pub fn repository_overrides(
    repository: Option<&str>,
    branch: Option<&str>,
) -> Result<Vec<(String, String)>, Failure> {
    let Some(repository) = repository.map(str::trim).filter(|r| !r.is_empty())
    else {
        return Ok(Vec::new());
    };
    let repository = repository.trim_end_matches('/');
    let host_and_path = repository.strip_prefix("https://").unwrap_or("");
    if host_and_path.split('/').filter(|p| !p.is_empty()).count() < 3
        || repository.contains("OWNER")
        || repository.contains(char::is_whitespace)
    {
        return Err(Failure(format!(
            "BOOK_REPOSITORY is `{repository}`, which is not a repository's \
             address; give one like https://github.com/someone/book, or \
             leave it unset for a book without repository links"
        )));
    }
    let branch = branch.map(str::trim).filter(|b| !b.is_empty());
    let branch = branch.unwrap_or("main");
    Ok(vec![
        (
            "MDBOOK_OUTPUT__HTML__GIT_REPOSITORY_URL".to_string(),
            repository.to_string(),
        ),
        (
            "MDBOOK_OUTPUT__HTML__EDIT_URL_TEMPLATE".to_string(),
            format!("{repository}/edit/{branch}/{{path}}"),
        ),
    ])
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

/// Every `.html` page of the book under `dir`, sorted (not rustdoc's
/// source view, which is rustdoc's to check).
fn html_pages(dir: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut pages = crate::links::all_files(dir)?;
    let rustdoc = dir.join(RUSTDOC);
    pages.retain(|p| {
        p.extension().is_some_and(|e| e == "html") && !p.starts_with(&rustdoc)
    });
    Ok(pages)
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
    fn a_source_link_must_reach_its_page_and_line() {
        let book = std::env::temp_dir().join("xtask-source-links");
        let _ = fs::remove_dir_all(&book);
        fs::create_dir_all(book.join("m3")).unwrap();
        fs::create_dir_all(book.join("rustdoc/src/listings/m3")).unwrap();
        fs::write(
            book.join("rustdoc/src/listings/m3/cost.rs.html"),
            "<a href=#1 id=1 data-nosnippet>1</a><a href=#2 id=2 x>2</a>",
        )
        .unwrap();
        let link = |to: &str| {
            format!("<a href=\"../rustdoc/src/listings/m3/{to}\">x</a>")
        };
        fs::write(book.join("m3/cost.html"), link("cost.rs.html#2")).unwrap();
        assert!(source_links(&book).unwrap().is_empty());
        let page =
            format!("{}{}", link("cost.rs.html#7"), link("gone.rs.html#1"));
        fs::write(book.join("m3/cost.html"), page).unwrap();
        let problems = source_links(&book).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].contains("cost.rs.html#7: no line 7"),
            "{problems:?}"
        );
        assert!(problems[1].contains("gone.rs.html#1: no such page"));
        fs::remove_dir_all(&book).unwrap();
    }

    #[test]
    fn the_repository_icons_need_a_real_address() {
        assert!(repository_overrides(None, None).unwrap().is_empty());
        assert!(repository_overrides(Some(" "), None).unwrap().is_empty());
        let set =
            repository_overrides(Some("https://github.com/ada/book/"), None)
                .unwrap();
        assert_eq!(set[0].1, "https://github.com/ada/book");
        assert_eq!(set[1].1, "https://github.com/ada/book/edit/main/{path}");
        let set = repository_overrides(
            Some("https://github.com/ada/book"),
            Some("pages"),
        )
        .unwrap();
        assert!(set[1].1.contains("/edit/pages/{path}"));
        for bad in ["https://github.com/OWNER/book", "github.com/ada/book"] {
            let why = repository_overrides(Some(bad), None).unwrap_err().0;
            assert!(why.contains("not a repository's address"), "{why}");
        }
    }
}
