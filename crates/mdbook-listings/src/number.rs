//! Numbering. Every listing, figure and output gets a label per chapter
//! ("Listing 2.3" is the third listing of chapter 2, "Figure A.1" the first
//! figure of the first appendix) and an id (`figure-NAME`) to link to.

use std::collections::HashMap;

/// What can be numbered and referred to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Listing,
    Figure,
    Output,
}

impl Kind {
    /// "Listing", "Figure", "Output".
    pub(crate) fn word(self) -> &'static str {
        match self {
            Kind::Listing => "Listing",
            Kind::Figure => "Figure",
            Kind::Output => "Output",
        }
    }

    /// "listing", "figure", "output", as in errors and `{{#ref}}`.
    pub(crate) fn lower(self) -> String {
        self.word().to_lowercase()
    }

    /// The HTML id of the item `key` of this kind, e.g. `figure-heat`.
    pub(crate) fn id(self, key: &str) -> String {
        format!("{}-{key}", self.lower())
    }

    /// The kind a `{{#ref kind:key}}` names.
    pub(crate) fn parse(word: &str) -> Option<Kind> {
        match word {
            "listing" => Some(Kind::Listing),
            "figure" => Some(Kind::Figure),
            "output" => Some(Kind::Output),
            _ => None,
        }
    }
}

/// Every numbered item of the book: (kind, key) → every (chapter index,
/// "Figure 2.1") that shows it.
#[derive(Default)]
pub(crate) struct Index(HashMap<(Kind, String), Vec<(usize, String)>>);

impl Index {
    /// The numbers of one chapter, given out in order.
    pub(crate) fn chapter<'a>(
        &'a mut self,
        here: usize,
        label: &'a str,
        path: &'a str,
    ) -> Numbering<'a> {
        Numbering {
            index: self,
            here,
            label,
            path,
            counts: HashMap::new(),
        }
    }

    /// The label of `(kind, key)` as shown in chapter `here`: its own if
    /// the chapter shows it, else the first chapter that does.
    pub(crate) fn lookup(
        &self,
        kind: Kind,
        key: &str,
        here: usize,
    ) -> Option<&(usize, String)> {
        let all = self.0.get(&(kind, key.to_string()))?;
        all.iter().find(|(c, _)| *c == here).or_else(|| all.first())
    }

    /// Every (kind, key) the book shows.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &(Kind, String)> {
        self.0.keys()
    }
}

/// Numbers items as one chapter shows them.
pub(crate) struct Numbering<'a> {
    index: &'a mut Index,
    here: usize,
    label: &'a str,
    path: &'a str,
    counts: HashMap<Kind, usize>,
}

impl Numbering<'_> {
    /// Give the item `key` the next number of its kind in this chapter.
    /// An item shown twice in one chapter is an error.
    pub(crate) fn add(
        &mut self,
        kind: Kind,
        key: &str,
        errors: &mut Vec<String>,
    ) {
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        let entry = self.index.0.entry((kind, key.to_string())).or_default();
        if entry.iter().any(|(c, _)| *c == self.here) {
            errors.push(format!(
                "{}: {} `{key}` is shown twice in one chapter",
                self.path,
                kind.lower()
            ));
        }
        entry.push((self.here, format!("{} {}.{n}", kind.word(), self.label)));
    }
}
