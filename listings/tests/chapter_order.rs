//! The module tree follows the book: a chapter's module may use earlier
//! chapters and the shared modules, never a later chapter, and a shared
//! module uses no chapter at all. The order is `src/SUMMARY.md`'s: each
//! chapter file `part/some-name.md` is the module `part::some_name`, and
//! a module that is no chapter but has a place in the book stands where
//! [`PLACED`] puts it (the fast f32 forms, `fast`, right before Appendix
//! E, which shows and times them).
//!
//! The `mod` lines are in that order too: in every file of `listings/src`,
//! the lines that declare a module holding a chapter (a part, such as
//! `m3`, or a chapter, such as `m3::attention`) follow SUMMARY.md. A module
//! that holds no chapter (a shared piece such as `phi`, `fast`, an engine,
//! `outputs`, `studies`) is not ordered by this check and may stand
//! anywhere; the comments above the `mod` lines say where each group goes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Modules that are no chapter but take a place in the book's order, each
/// with the chapter it stands right before: it may use the chapters before
/// that one, and that chapter and the later ones may use it.
const PLACED: [(&str, &str); 1] = [("fast", "appendix::speed")];

/// The module path of every chapter file in SUMMARY.md, in reading order
/// (`m3/delete-softmax.md` is `m3::delete_softmax`), whether it has a
/// module or not.
fn summary_chapters(summary: &str) -> Vec<String> {
    let mut chapters = Vec::new();
    for line in summary.lines() {
        let Some(start) = line.find("](") else {
            continue;
        };
        let rest = &line[start + 2..];
        let Some(end) = rest.find(".md)") else {
            continue;
        };
        chapters.push(rest[..end].replace(['/'], "::").replace('-', "_"));
    }
    chapters
}

/// Module paths of the chapters that have a module, in reading order, with
/// the [`PLACED`] modules in their places.
fn chapter_order(
    summary: &str,
    modules: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut order = Vec::new();
    for module in summary_chapters(summary) {
        for (placed, before) in PLACED {
            if module == before {
                order.push(placed.to_string());
            }
        }
        if modules
            .keys()
            .any(|m| m == &module || m.starts_with(&format!("{module}::")))
        {
            order.push(module);
        }
    }
    order.push("trainers".to_string()); // they train the chapters' models
    order
}

/// The modules a file declares (`mod name;` or `pub mod name;`, alone on
/// a line), in the order written.
fn mod_lines(code: &str) -> Vec<&str> {
    code.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line.strip_prefix("pub ").unwrap_or(line);
            rest.strip_prefix("mod ")?.strip_suffix(';')
        })
        .collect()
}

/// In every file of `modules`, the `mod` lines of modules that hold a
/// chapter, where they do not follow SUMMARY.md. A module holds the
/// chapters at or below its path; its place is its first chapter's.
fn mod_lines_out_of_order(
    summary: &str,
    modules: &BTreeMap<String, String>,
) -> Vec<String> {
    let chapters = summary_chapters(summary);
    let place = |module: &str| {
        chapters
            .iter()
            .position(|c| c == module || c.starts_with(&format!("{module}::")))
    };
    let mut wrong = Vec::new();
    for (module, code) in modules {
        let mut last: Option<(usize, String)> = None;
        for name in mod_lines(code) {
            let child = match module.as_str() {
                "lib" => name.to_string(),
                parent => format!("{parent}::{name}"),
            };
            let Some(rank) = place(&child) else {
                continue; // holds no chapter: stands anywhere
            };
            if let Some((before, previous)) = &last
                && *before > rank
            {
                wrong.push(format!(
                    "{module}: `mod {name};` comes after `mod {previous};`, \
                     but SUMMARY.md has {} before {}",
                    chapters[rank], chapters[*before]
                ));
            }
            last = Some((rank, name.to_string()));
        }
    }
    wrong
}

/// Every source file under `dir` by module path ("m3::attention"), with
/// its code above the first `#[cfg(test)]` (tests may reach further).
fn modules(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("listings/src can be read")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let name = match (prefix, stem.as_str()) {
            (p, "mod") => p.to_string(),
            ("", s) => s.to_string(),
            (p, s) => format!("{p}::{s}"),
        };
        if path.is_dir() {
            modules(&path, &name, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            // A file of tests (`#[cfg(test)] mod tests;`, or any file of a
            // `tests/` folder) is all test code.
            let code = match name.split("::").any(|part| part == "tests") {
                true => "",
                false => text.split("\n#[cfg(test)]").next().unwrap_or(""),
            };
            out.insert(name, code.to_string());
        }
    }
}

/// The module paths after `crate::` in `code`, with `crate::a::{b, c}`
/// read as `crate::a::b` and `crate::a::c`.
fn uses(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let len = rest
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || c == '_' || c == ':')
            })
            .unwrap_or(rest.len());
        let path = rest[..len].trim_end_matches(':').to_string();
        if rest[len..].starts_with('{') {
            let group = &rest[len + 1..rest.find('}').unwrap_or(rest.len())];
            for item in group.split(',') {
                let item = item.split_whitespace().next().unwrap_or("");
                if !item.is_empty() {
                    found.push(format!("{path}::{item}"));
                }
            }
        } else {
            found.push(path);
        }
    }
    found
}

/// The chapter (an entry of `order`) that module path `m` lies in.
fn chapter_of<'a>(m: &str, order: &'a [String]) -> Option<(usize, &'a str)> {
    order
        .iter()
        .enumerate()
        .filter(|(_, c)| m == c.as_str() || m.starts_with(&format!("{c}::")))
        .map(|(i, c)| (i, c.as_str()))
        .next_back()
}

/// Modules that gather the chapters rather than belong to one.
const GATHERERS: [&str; 7] = [
    "lib", "outputs", "studies", "m3", "paper", "after", "appendix",
];

fn later_chapter_uses(
    summary: &str,
    modules: &BTreeMap<String, String>,
) -> Vec<String> {
    let order = chapter_order(summary, modules);
    let mut wrong = Vec::new();
    for (module, code) in modules {
        if GATHERERS.contains(&module.as_str()) {
            continue;
        }
        let own = chapter_of(module, &order);
        for used in uses(code) {
            let Some((rank, chapter)) = chapter_of(&used, &order) else {
                continue; // a shared module
            };
            match own {
                None => wrong.push(format!(
                    "shared module {module} uses chapter {chapter} ({used})"
                )),
                Some((own_rank, own_chapter)) if rank > own_rank => {
                    wrong.push(format!(
                        "{module} (chapter {own_chapter}) uses the later \
                         chapter {chapter} ({used})"
                    ))
                }
                _ => {}
            }
        }
    }
    wrong
}

fn read_tree() -> (String, BTreeMap<String, String>) {
    let root = Path::new(ROOT);
    let summary = std::fs::read_to_string(root.join("../src/SUMMARY.md"))
        .expect("src/SUMMARY.md can be read");
    let mut found = BTreeMap::new();
    modules(&root.join("src"), "", &mut found);
    (summary, found)
}

#[test]
fn every_chapter_module_uses_only_earlier_chapters_and_shared_modules() {
    let (summary, modules) = read_tree();
    let wrong = later_chapter_uses(&summary, &modules);
    assert!(
        wrong.is_empty(),
        "imports against the book's order:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_module_under_a_part_is_a_chapter_of_the_book() {
    let (summary, modules) = read_tree();
    let order = chapter_order(&summary, &modules);
    for module in modules.keys() {
        let part = module.split("::").next().unwrap_or("");
        if ["m3", "paper", "after", "appendix"].contains(&part)
            && !GATHERERS.contains(&module.as_str())
        {
            assert!(
                chapter_of(module, &order).is_some(),
                "{module} matches no chapter file in src/SUMMARY.md"
            );
        }
    }
}

#[test]
fn every_mod_line_of_a_chapter_follows_the_book() {
    let (summary, modules) = read_tree();
    let wrong = mod_lines_out_of_order(&summary, &modules);
    assert!(
        wrong.is_empty(),
        "mod lines against the book's order (src/SUMMARY.md):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_catches_mod_lines_out_of_order_and_lets_others_stand_anywhere() {
    let (summary, mut modules) = read_tree();
    let swap = |code: &mut String, a: &str, b: &str| {
        let (a, b) = (format!("pub mod {a};"), format!("pub mod {b};"));
        assert!(code.contains(&a) && code.contains(&b), "{a} and {b}");
        *code = code.replace(&a, "@").replace(&b, &a).replace('@', &b);
    };
    // A module that holds no chapter, anywhere: nothing to report.
    let lib = modules.get_mut("lib").expect("lib");
    *lib = format!("pub mod engine;\n{lib}pub mod zeta;\n");
    assert_eq!(
        mod_lines_out_of_order(&summary, &modules),
        Vec::<String>::new()
    );
    // Two chapters of Part II swapped, and Appendix E before Part I.
    swap(modules.get_mut("paper").expect("paper"), "fwp", "capacity");
    swap(modules.get_mut("lib").expect("lib"), "m3", "appendix");
    let wrong = mod_lines_out_of_order(&summary, &modules);
    assert_eq!(wrong.len(), 3, "{wrong:?}");
    assert!(wrong.iter().any(|w| w.starts_with(
        "paper: `mod fwp;` comes after `mod capacity;`, but SUMMARY.md has \
         paper::fwp before paper::capacity"
    )));
    assert!(wrong.iter().any(|w| {
        w.starts_with("lib: `mod paper;` comes after `mod appendix;`")
    }));
    // Part III's `after` now stands between `paper` and Part I's `m3`.
    assert!(
        wrong
            .iter()
            .any(|w| w.starts_with("lib: `mod m3;` comes after `mod after;`"))
    );
}

#[test]
fn the_check_catches_an_import_from_a_later_chapter() {
    let (summary, mut modules) = read_tree();
    let attention = modules.get_mut("m3::attention").expect("m3::attention");
    attention.push_str("\nuse crate::paper::delta_rule::delta_rule_step;\n");
    let wrong = later_chapter_uses(&summary, &modules);
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert!(wrong[0].contains("paper::delta_rule"), "{wrong:?}");
}
