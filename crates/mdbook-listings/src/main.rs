//! `mdbook-listings`: the command mdBook runs as the `listings` preprocessor,
//! and, as `mdbook-listings katex-guard`, as a second pass after KaTeX.
//!
//! mdBook calls it twice: `mdbook-listings [katex-guard] supports RENDERER`
//! (we support every renderer, so exit 0), then with `[context, book]` as
//! JSON on standard input, expecting the edited book on standard output.

use mdbook_listings::{BookRegistry, Mode, katex_guard, process};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let guard_pass = args.first().map(String::as_str) == Some("katex-guard");
    if args.iter().any(|a| a == "supports") {
        return ExitCode::SUCCESS;
    }
    if guard_pass {
        return match read_book() {
            Ok((_, mut book)) => {
                for_each_content(&mut book, &|c| katex_guard::guard(c));
                println!("{book}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: [katex-guard] {}", e.join("; "));
                ExitCode::FAILURE
            }
        };
    }
    match run() {
        Ok(book) => {
            println!("{book}");
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("error: [listings] {e}");
            }
            eprintln!(
                "error: [listings] {} problem(s); the book was not built",
                errors.len()
            );
            ExitCode::FAILURE
        }
    }
}

/// Apply `edit` to the content of every chapter.
fn for_each_content(node: &mut Value, edit: &dyn Fn(&str) -> String) {
    match node {
        Value::Object(map) => {
            if let Some(Value::String(content)) = map.get_mut("content") {
                *content = edit(content);
            }
            for (_, child) in map.iter_mut() {
                for_each_content(child, edit);
            }
        }
        Value::Array(items) => {
            items.iter_mut().for_each(|i| for_each_content(i, edit));
        }
        _ => {}
    }
}

fn run() -> Result<Value, Vec<String>> {
    let (context, mut book) = read_book()?;
    let root = PathBuf::from(context["root"].as_str().unwrap_or("."));
    let src =
        root.join(context["config"]["book"]["src"].as_str().unwrap_or("src"));
    let mode = match context["renderer"].as_str() {
        Some("test") => Mode::Test,
        _ => Mode::Render,
    };
    process(&mut book, &src, &BookRegistry, mode)?;
    Ok(book)
}

/// mdBook's `[context, book]` from standard input.
fn read_book() -> Result<(Value, Value), Vec<String>> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| vec![format!("cannot read mdBook's input: {e}")])?;
    let parsed: Value = serde_json::from_str(&input)
        .map_err(|e| vec![format!("mdBook's input is not JSON: {e}")])?;
    match parsed {
        Value::Array(pair) if pair.len() == 2 => {
            let [context, book]: [Value; 2] =
                pair.try_into().expect("two elements");
            Ok((context, book))
        }
        _ => Err(vec!["expected [context, book] from mdBook".to_string()]),
    }
}
