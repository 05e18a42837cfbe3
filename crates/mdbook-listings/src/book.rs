//! mdBook's book model, as far as the preprocessor uses it: the book, its
//! items and chapters, and the context mdBook runs a preprocessor in.
//!
//! The types follow `mdbook_preprocessor::book` of mdBook 0.5 (`Book`,
//! `BookItem`, `Chapter`) and `parse_input`. That crate is not used: it
//! brings mdbook-core with regex, toml, tracing and serde's derive, which
//! took 148 s more CPU to compile cold than serde_json alone on this
//! machine (156 s against 8.5 s); serde's derive alone costs 34 s. These
//! types are read from and written back to serde_json's `Value` here, in
//! one place; the fields the preprocessor does not use (a chapter's name,
//! its source path, its parents' names, and anything a later mdBook adds)
//! are carried through unchanged.

use serde_json::{Map, Value};
use std::path::PathBuf;

/// What mdBook tells a preprocessor besides the book.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The book's root folder, the one with `book.toml`.
    pub root: PathBuf,
    /// `[book] src` of `book.toml`: the source folder, relative to `root`.
    pub src: String,
    /// The renderer the book is prepared for: `html`, or `test` under
    /// `mdbook test`.
    pub renderer: String,
}

/// A book: its items in the order of `SUMMARY.md`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Book {
    pub items: Vec<BookItem>,
    rest: Map<String, Value>,
}

/// One entry of `SUMMARY.md`.
#[derive(Clone, Debug, PartialEq)]
pub enum BookItem {
    Chapter(Chapter),
    Separator,
    PartTitle(String),
}

/// A chapter, with its sections in `sub_items`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chapter {
    /// The chapter's Markdown.
    pub content: String,
    /// Its section number, `[2, 1]` for 2.1; `None` for a prefix or suffix
    /// chapter (an appendix).
    pub number: Option<Vec<u32>>,
    pub sub_items: Vec<BookItem>,
    /// Its path in the source folder; `None` for a draft chapter.
    pub path: Option<String>,
    rest: Map<String, Value>,
}

/// `[context, book]`, as mdBook writes it to a preprocessor's standard
/// input.
pub fn parse_input(input: &str) -> Result<(Context, Book), String> {
    let parsed: Value = serde_json::from_str(input)
        .map_err(|e| format!("mdBook's input is not JSON: {e}"))?;
    let Value::Array(pair) = parsed else {
        return Err("expected [context, book] from mdBook".to_string());
    };
    let [context, book]: [Value; 2] = pair
        .try_into()
        .map_err(|_| "expected [context, book] from mdBook".to_string())?;
    let context = Context {
        root: PathBuf::from(context["root"].as_str().unwrap_or(".")),
        src: context["config"]["book"]["src"]
            .as_str()
            .unwrap_or("src")
            .to_string(),
        renderer: context["renderer"].as_str().unwrap_or_default().to_string(),
    };
    Ok((context, Book::from_json(book)?))
}

impl Book {
    /// The book mdBook serialised.
    pub fn from_json(value: Value) -> Result<Book, String> {
        let Value::Object(mut rest) = value else {
            return Err("the book is not a JSON object".to_string());
        };
        let items = items(rest.remove("items"))?;
        Ok(Book { items, rest })
    }

    /// The book as mdBook reads it back.
    pub fn into_json(self) -> Value {
        let mut map = self.rest;
        map.insert("items".into(), items_json(self.items));
        Value::Object(map)
    }

    /// Every chapter and section, in reading order (a chapter before its
    /// sections).
    pub fn chapters(&self) -> Vec<&Chapter> {
        fn walk<'a>(items: &'a [BookItem], out: &mut Vec<&'a Chapter>) {
            for item in items {
                if let BookItem::Chapter(ch) = item {
                    out.push(ch);
                    walk(&ch.sub_items, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.items, &mut out);
        out
    }

    /// Apply `edit` to every chapter and section, in reading order.
    pub fn for_each_chapter_mut(&mut self, mut edit: impl FnMut(&mut Chapter)) {
        fn walk(items: &mut [BookItem], edit: &mut impl FnMut(&mut Chapter)) {
            for item in items {
                if let BookItem::Chapter(ch) = item {
                    edit(ch);
                    walk(&mut ch.sub_items, edit);
                }
            }
        }
        walk(&mut self.items, &mut edit);
    }
}

fn items(value: Option<Value>) -> Result<Vec<BookItem>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        return Err("a book's items are not a JSON array".to_string());
    };
    items.into_iter().map(item).collect()
}

fn item(value: Value) -> Result<BookItem, String> {
    match value {
        Value::String(s) if s == "Separator" => Ok(BookItem::Separator),
        Value::Object(mut map) if map.len() == 1 => {
            if let Some(Value::String(title)) = map.remove("PartTitle") {
                return Ok(BookItem::PartTitle(title));
            }
            match map.remove("Chapter") {
                Some(Value::Object(ch)) => chapter(ch).map(BookItem::Chapter),
                _ => Err("a book item that is no chapter, separator or part \
                          title"
                    .to_string()),
            }
        }
        other => Err(format!("an unknown book item: {other}")),
    }
}

fn chapter(mut rest: Map<String, Value>) -> Result<Chapter, String> {
    let content = match rest.remove("content") {
        Some(Value::String(s)) => s,
        _ => return Err("a chapter without content".to_string()),
    };
    let number = match rest.remove("number") {
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .map(|p| p.as_u64().and_then(|n| u32::try_from(n).ok()))
                .collect::<Option<Vec<u32>>>()
                .ok_or("a chapter number that is not a list of integers")?,
        ),
        _ => None,
    };
    let path = match rest.remove("path") {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    let sub_items = items(rest.remove("sub_items"))?;
    Ok(Chapter {
        content,
        number,
        sub_items,
        path,
        rest,
    })
}

fn items_json(items: Vec<BookItem>) -> Value {
    Value::Array(
        items
            .into_iter()
            .map(|item| match item {
                BookItem::Chapter(ch) => {
                    let mut map = ch.rest;
                    map.insert("content".into(), ch.content.into());
                    map.insert(
                        "number".into(),
                        ch.number.map_or(Value::Null, Value::from),
                    );
                    map.insert("sub_items".into(), items_json(ch.sub_items));
                    map.insert(
                        "path".into(),
                        ch.path.map_or(Value::Null, Value::from),
                    );
                    let mut item = Map::new();
                    item.insert("Chapter".into(), Value::Object(map));
                    Value::Object(item)
                }
                BookItem::Separator => Value::from("Separator"),
                BookItem::PartTitle(title) => {
                    let mut item = Map::new();
                    item.insert("PartTitle".into(), Value::from(title));
                    Value::Object(item)
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_book_reads_and_writes_back_unchanged() {
        let book = json!({"items": [
            {"Chapter": {
                "name": "One", "content": "# One\n", "number": [1],
                "sub_items": [{"Chapter": {
                    "name": "Sub", "content": "s", "number": [1, 1],
                    "sub_items": [], "path": "one/sub.md",
                    "source_path": "one/sub.md", "parent_names": ["One"]
                }}],
                "path": "one.md", "source_path": "one.md", "parent_names": []
            }},
            "Separator",
            {"PartTitle": "Part II"},
            {"Chapter": {
                "name": "Draft", "content": "", "number": null,
                "sub_items": [], "path": null, "source_path": null,
                "parent_names": []
            }}
        ], "__non_exhaustive": null});
        let typed = Book::from_json(book.clone()).unwrap();
        let paths: Vec<_> =
            typed.chapters().iter().map(|c| c.path.clone()).collect();
        assert_eq!(
            paths,
            [Some("one.md".into()), Some("one/sub.md".into()), None]
        );
        assert_eq!(typed.chapters()[1].number, Some(vec![1, 1]));
        assert_eq!(typed.into_json(), book);
    }

    #[test]
    fn the_input_gives_root_source_folder_and_renderer() {
        let input = r#"[{"root": "/b", "config": {"book": {"src": "text"}},
            "renderer": "test", "mdbook_version": "0.5.4"}, {"items": []}]"#;
        let (context, book) = parse_input(input).unwrap();
        assert_eq!(context.root, PathBuf::from("/b"));
        assert_eq!(context.src, "text");
        assert_eq!(context.renderer, "test");
        assert!(book.items.is_empty());
        assert!(parse_input("{}").is_err());
    }
}
