//! The notation check: every symbol of the chapters' display math
//! (`$$…$$`) must have an entry in Appendix A ([`REGISTRY`]), the book's one
//! notation registry, so that each letter names one object book-wide.
//!
//! A symbol is a letter (Latin or Greek, `\ell` included) with its
//! decorations: its font (`\mathbf`, with `\boldsymbol` and `\bm` read as
//! `\mathbf`; `\mathcal`, `\mathbb`, …) and its accents (`\bar`, `\hat`,
//! `\tilde`, …). `\mathbf{S}` and `S` are two symbols, as `\bar{\mathbf{k}}`
//! and `\mathbf{k}` are. A subscript that indexes (`\mathbf{S}_t`,
//! `\beta_t`, `S_{t-1}`, `k_j`) is dropped, and its letters are symbols of
//! their own; a subscript that names belongs to the symbol: a `\text{}` or
//! `\mathrm{}` word (`d_{\text{model}}`), or an upper-case or Greek letter
//! under an upper-case letter (`W_Q`, `W_\beta`). Superscripts and primes
//! are dropped (their letters count). Not symbols: digits, operators and
//! relations (`\mathbb{E}` for an expectation included), function names
//! (`\exp`, `\operatorname{sim}`), `e` raised to a power (the
//! exponential), text (`\text{…}`, `\mathrm{…}`) and environment names.
//!
//! A symbol is registered when it occurs in any math (inline or display)
//! of the registry's page.

use crate::Failure;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::Path;

/// The registry: Appendix A.
pub const REGISTRY: &str = "src/appendix/notation.md";

/// Whether the build fails on a symbol the registry lacks. On: the
/// registry holds every symbol of display math, and a new one fails the
/// build until it has its entry.
pub const ENFORCE: bool = true;

/// A symbol: a letter with its font and accents, and a naming subscript.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Symbol {
    /// The letter: `S`, or a command such as `\beta`.
    pub letter: String,
    /// Its font command, if any (`\mathbf`, `\mathcal`, …).
    pub font: Option<String>,
    /// Its accents, innermost first (`\bar`, `\hat`, …).
    pub accents: Vec<String>,
    /// A subscript that names it (`Q` in `W_Q`), as TeX.
    pub name: Option<String>,
}

impl Symbol {
    fn letter(letter: &str) -> Self {
        Symbol {
            letter: letter.to_string(),
            font: None,
            accents: Vec::new(),
            name: None,
        }
    }
}

impl fmt::Display for Symbol {
    /// The symbol as TeX: `\bar{\mathbf{k}}`, `W_{Q}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut tex = self.letter.clone();
        if let Some(font) = &self.font {
            tex = format!("{font}{{{tex}}}");
        }
        for accent in &self.accents {
            tex = format!("{accent}{{{tex}}}");
        }
        if let Some(name) = &self.name {
            tex = format!("{tex}_{{{name}}}");
        }
        f.write_str(&tex)
    }
}

/// Where a symbol occurs: a line of a chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    pub symbol: Symbol,
    /// The chapter's path from the root.
    pub chapter: String,
    /// The line, from 1.
    pub line: usize,
}

const GREEK: [&str; 40] = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "pi",
    "varpi",
    "rho",
    "varrho",
    "sigma",
    "varsigma",
    "tau",
    "upsilon",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Xi",
    "Pi",
    "Sigma",
    "Upsilon",
    "Phi",
    "Psi",
    "Omega",
];

/// Font commands, and the one each is read as.
const FONTS: [(&str, &str); 10] = [
    ("mathbf", "\\mathbf"),
    ("boldsymbol", "\\mathbf"),
    ("bm", "\\mathbf"),
    ("mathcal", "\\mathcal"),
    ("mathbb", "\\mathbb"),
    ("mathsf", "\\mathsf"),
    ("mathit", "\\mathit"),
    ("mathscr", "\\mathscr"),
    ("mathfrak", "\\mathfrak"),
    ("mathbfit", "\\mathbf"),
];

/// Accent commands, and the one each is read as.
const ACCENTS: [(&str, &str); 12] = [
    ("bar", "\\bar"),
    ("overline", "\\bar"),
    ("hat", "\\hat"),
    ("widehat", "\\hat"),
    ("tilde", "\\tilde"),
    ("widetilde", "\\tilde"),
    ("vec", "\\vec"),
    ("dot", "\\dot"),
    ("ddot", "\\ddot"),
    ("check", "\\check"),
    ("breve", "\\breve"),
    ("acute", "\\acute"),
];

/// Commands whose argument is text or a name, never a symbol.
const WORDS: [&str; 12] = [
    "text",
    "textrm",
    "textbf",
    "textit",
    "textsf",
    "texttt",
    "mathrm",
    "operatorname",
    "mbox",
    "begin",
    "end",
    "tag",
];

/// Commands whose argument is dropped whole (colours, labels).
const DROPPED: [&str; 3] = ["label", "color", "hspace"];

/// One token of TeX, with its byte offset.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// `\name` (letters), or `\` and one other character.
    Command(String),
    Open,
    Close,
    Sub,
    Sup,
    /// Any other character.
    Char(char),
}

fn lex(tex: &str) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    let mut chars = tex.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let tok = match c {
            '\\' => {
                let mut name = String::new();
                while let Some(&(_, n)) = chars.peek() {
                    if n.is_ascii_alphabetic() {
                        name.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if name.is_empty()
                    && let Some((_, n)) = chars.next()
                {
                    name.push(n);
                }
                // `\operatorname*` is `\operatorname`.
                if chars.peek().is_some_and(|&(_, n)| n == '*') {
                    chars.next();
                }
                Tok::Command(name)
            }
            '{' => Tok::Open,
            '}' => Tok::Close,
            '_' => Tok::Sub,
            '^' => Tok::Sup,
            c if c.is_whitespace() => continue,
            c => Tok::Char(c),
        };
        out.push((tok, at));
    }
    out
}

/// What one atom of TeX is, for its neighbours: a symbol (that a
/// subscript or a decoration may attach to), a word (a name subscript), or
/// anything else.
#[derive(Debug, Clone)]
enum Nucleus {
    Symbol(Symbol, usize),
    Word(String),
    Other,
}

struct Parser<'a> {
    toks: &'a [(Tok, usize)],
    at: usize,
    tex: &'a str,
    /// Every symbol found, with its byte offset.
    found: Vec<(Symbol, usize)>,
}

impl Parser<'_> {
    /// Parse atoms up to the end or a closing brace (consumed); each
    /// symbol left standing is recorded.
    fn sequence(&mut self) -> Vec<Nucleus> {
        let mut atoms: Vec<Nucleus> = Vec::new();
        while self.at < self.toks.len() {
            match &self.toks[self.at].0 {
                Tok::Close => {
                    self.at += 1;
                    break;
                }
                Tok::Sub => {
                    self.at += 1;
                    let sub = self.atom();
                    let last = atoms.pop().unwrap_or(Nucleus::Other);
                    atoms.push(subscripted(last, sub, &mut self.found));
                }
                Tok::Sup => {
                    self.at += 1;
                    let sup = self.atom();
                    record(sup, &mut self.found);
                }
                _ => {
                    let atom = self.atom();
                    // e raised to a power is the exponential, no symbol.
                    let exponential = matches!(&atom, Nucleus::Symbol(s, _)
                        if *s == Symbol::letter("e"))
                        && matches!(
                            self.toks.get(self.at),
                            Some((Tok::Sup, _))
                        );
                    atoms.push(if exponential { Nucleus::Other } else { atom });
                }
            }
        }
        atoms
    }

    /// One atom: a group, a letter, a command with its arguments.
    fn atom(&mut self) -> Nucleus {
        let Some((tok, offset)) = self.toks.get(self.at).cloned() else {
            return Nucleus::Other;
        };
        self.at += 1;
        match tok {
            Tok::Open => {
                let mut inner = self.sequence();
                if inner.len() == 1 {
                    inner.pop().expect("one atom")
                } else {
                    inner.into_iter().for_each(|a| record(a, &mut self.found));
                    Nucleus::Other
                }
            }
            Tok::Char(c) if c.is_ascii_alphabetic() => {
                Nucleus::Symbol(Symbol::letter(&c.to_string()), offset)
            }
            Tok::Char('\'') => Nucleus::Other,
            Tok::Command(name) => self.command(&name, offset),
            _ => Nucleus::Other,
        }
    }

    fn command(&mut self, name: &str, offset: usize) -> Nucleus {
        if GREEK.contains(&name) || name == "ell" {
            return Nucleus::Symbol(
                Symbol::letter(&format!("\\{name}")),
                offset,
            );
        }
        if let Some((_, font)) = FONTS.iter().find(|(f, _)| *f == name) {
            return match self.atom() {
                // Expectation, an operator.
                Nucleus::Symbol(s, _)
                    if *font == "\\mathbb" && s.letter == "E" =>
                {
                    Nucleus::Other
                }
                Nucleus::Symbol(mut s, at) => {
                    s.font = Some(font.to_string());
                    Nucleus::Symbol(s, at)
                }
                other => other,
            };
        }
        if let Some((_, accent)) = ACCENTS.iter().find(|(a, _)| *a == name) {
            return match self.atom() {
                Nucleus::Symbol(mut s, at) => {
                    s.accents.push(accent.to_string());
                    Nucleus::Symbol(s, at)
                }
                other => {
                    record(other, &mut self.found);
                    Nucleus::Other
                }
            };
        }
        if WORDS.contains(&name) || DROPPED.contains(&name) {
            let start = self.at;
            self.skip_argument();
            let words = self.text_of(start, self.at);
            return if WORDS.contains(&name) && name.starts_with("text")
                || name == "mathrm"
            {
                Nucleus::Word(format!("\\{name}{{{words}}}"))
            } else {
                Nucleus::Other
            };
        }
        Nucleus::Other
    }

    /// Skip one argument (a group, or one token).
    fn skip_argument(&mut self) {
        match self.toks.get(self.at).map(|t| &t.0) {
            Some(Tok::Open) => {
                let mut depth = 0;
                while let Some((tok, _)) = self.toks.get(self.at) {
                    self.at += 1;
                    match tok {
                        Tok::Open => depth += 1,
                        Tok::Close => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            Some(_) => self.at += 1,
            None => {}
        }
    }

    /// The TeX inside the argument spanning tokens `from..to`, without
    /// its braces.
    fn text_of(&self, from: usize, to: usize) -> String {
        let start = self.toks.get(from).map_or(self.tex.len(), |t| t.1);
        let end = self.toks.get(to).map_or(self.tex.len(), |t| t.1);
        let raw = self.tex[start..end].trim();
        raw.strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .unwrap_or(raw)
            .trim()
            .to_string()
    }
}

/// Record the symbol an atom left standing.
fn record(atom: Nucleus, found: &mut Vec<(Symbol, usize)>) {
    if let Nucleus::Symbol(s, at) = atom {
        found.push((s, at));
    }
}

/// Attach subscript `sub` to `base`: a name joins the symbol; an index
/// is dropped from it and its letters are symbols of their own.
fn subscripted(
    base: Nucleus,
    sub: Nucleus,
    found: &mut Vec<(Symbol, usize)>,
) -> Nucleus {
    let Nucleus::Symbol(mut symbol, at) = base else {
        record(sub, found);
        return base;
    };
    let upper = symbol.letter.len() == 1
        && symbol.letter.chars().all(|c| c.is_ascii_uppercase());
    let name = match &sub {
        Nucleus::Word(w) => Some(w.clone()),
        Nucleus::Symbol(s, _)
            if upper
                && s.font.is_none()
                && s.accents.is_empty()
                && (s.letter.chars().all(|c| c.is_ascii_uppercase())
                    || s.letter.starts_with('\\')) =>
        {
            Some(s.to_string())
        }
        _ => None,
    };
    match name {
        Some(n) if symbol.name.is_none() => symbol.name = Some(n),
        _ => record(sub, found),
    }
    Nucleus::Symbol(symbol, at)
}

/// Every symbol of a piece of TeX, with its byte offset, in order.
pub fn symbols(tex: &str) -> Vec<(Symbol, usize)> {
    let toks = lex(tex);
    let mut parser = Parser {
        toks: &toks,
        at: 0,
        tex,
        found: Vec::new(),
    };
    while parser.at < toks.len() {
        for atom in parser.sequence() {
            record(atom, &mut parser.found);
        }
    }
    let mut found = parser.found;
    found.sort_by_key(|(_, at)| *at);
    found
}

/// The math of a chapter's Markdown, outside code: each piece as (TeX,
/// line of its first character, display or not).
pub fn math(text: &str) -> Vec<(String, usize, bool)> {
    // Blank out fenced code, keeping the lines.
    let mut kept = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        match &fence {
            Some(f) => {
                if t.starts_with(f.as_str()) {
                    fence = None;
                }
                kept.push('\n');
            }
            None if t.starts_with("```") || t.starts_with("~~~") => {
                fence = Some(t[..3].to_string());
                kept.push('\n');
            }
            None => {
                // Inline code may hold a dollar sign.
                kept.push_str(&without_code_spans(line));
            }
        }
    }
    let mut out = Vec::new();
    let mut rest = kept.as_str();
    let mut offset = 0;
    let line_at = |at: usize| kept[..at].matches('\n').count() + 1;
    while let Some(i) = find_dollar(rest) {
        let display = rest[i..].starts_with("$$");
        let open = if display { 2 } else { 1 };
        let body = &rest[i + open..];
        let close = if display {
            body.find("$$")
        } else {
            find_dollar(body).filter(|&e| !body[..e].contains("\n\n"))
        };
        let Some(end) = close else {
            // A lone dollar sign: not math.
            rest = &rest[i + open..];
            offset += i + open;
            continue;
        };
        let at = offset + i + open;
        out.push((body[..end].to_string(), line_at(at), display));
        let consumed = i + open + end + open;
        rest = &rest[consumed..];
        offset += consumed;
    }
    out
}

/// The first `$` of `s` that is not escaped.
fn find_dollar(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    (0..bytes.len())
        .find(|&i| bytes[i] == b'$' && (i == 0 || bytes[i - 1] != b'\\'))
}

/// A line with its inline code spans blanked (same length is not needed,
/// only the line count).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find('`') {
        out.push_str(&rest[..i]);
        let ticks = rest[i..].bytes().take_while(|b| *b == b'`').count();
        let fence = &rest[i..i + ticks];
        match rest[i + ticks..].find(fence) {
            Some(e) => rest = &rest[i + ticks + e + ticks..],
            None => {
                out.push_str(&rest[i..i + ticks]);
                rest = &rest[i + ticks..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The symbols of the display math of a chapter, with their lines.
pub fn display_symbols(chapter: &str, text: &str) -> Vec<Use> {
    let mut out = Vec::new();
    for (tex, line, display) in math(text) {
        if !display {
            continue;
        }
        for (symbol, at) in symbols(&tex) {
            out.push(Use {
                symbol,
                chapter: chapter.to_string(),
                line: line + tex[..at].matches('\n').count(),
            });
        }
    }
    out
}

/// Every symbol the registry's math holds.
pub fn registered(registry: &str) -> BTreeSet<Symbol> {
    math(registry)
        .iter()
        .flat_map(|(tex, _, _)| symbols(tex))
        .map(|(s, _)| s)
        .collect()
}

/// The symbols of the chapters' display math (every chapter under
/// `root/src` but the registry) that the registry lacks: each with its
/// first use and the number of chapters using it, in the order of first
/// use.
pub fn missing(root: &Path) -> Result<Vec<(Use, usize)>, Failure> {
    let registry = fs::read_to_string(root.join(REGISTRY)).map_err(|e| {
        Failure(format!("the notation registry {REGISTRY} is missing: {e}"))
    })?;
    let known = registered(&registry);
    let mut first: BTreeMap<Symbol, (Use, BTreeSet<String>)> = BTreeMap::new();
    let mut order = Vec::new();
    for (rel, text) in crate::prose::chapters(root)? {
        if rel == REGISTRY {
            continue;
        }
        for used in display_symbols(&rel, &text) {
            if known.contains(&used.symbol) {
                continue;
            }
            let entry = first.entry(used.symbol.clone()).or_insert_with(|| {
                order.push(used.symbol.clone());
                (used.clone(), BTreeSet::new())
            });
            entry.1.insert(rel.clone());
        }
    }
    Ok(order
        .into_iter()
        .map(|s| {
            let (used, chapters) = first.remove(&s).expect("recorded");
            (used, chapters.len())
        })
        .collect())
}

/// One line per missing symbol, as the build prints it.
pub fn report(missing: &[(Use, usize)]) -> Vec<String> {
    missing
        .iter()
        .map(|(u, chapters)| {
            format!(
                "{}  first in {}:{}{}",
                u.symbol,
                u.chapter,
                u.line,
                if *chapters > 1 {
                    format!(" ({chapters} chapters)")
                } else {
                    String::new()
                }
            )
        })
        .collect()
}

/// The build's notation check of the book at `root`: list every symbol
/// of display math that Appendix A lacks; fail if there is one and
/// `enforce`, else only report them.
pub fn check(root: &Path, enforce: bool) -> Result<(), Failure> {
    crate::step(&format!(
        "notation: every symbol of display math has an entry in {REGISTRY}{}",
        if enforce { "" } else { " (report only)" }
    ));
    if !root.join(REGISTRY).exists() {
        // Every book has one (the checks' small books carry a small one),
        // so a missing registry fails rather than switching the check off.
        return Err(Failure(format!(
            "there is no registry {REGISTRY} to check against"
        )));
    }
    let lines = report(&missing(root)?);
    if lines.is_empty() {
        println!("every symbol of display math is in the registry");
        return Ok(());
    }
    let list = lines.join("\n");
    if enforce {
        return Err(Failure(format!(
            "{} symbol(s) of display math have no entry in {REGISTRY} \
             (add each to the registry, or use a symbol it defines):\n{list}",
            lines.len()
        )));
    }
    println!(
        "{} symbol(s) are missing from the registry (not enforced yet, see \
         notation::ENFORCE):\n{list}",
        lines.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tex: &str) -> Vec<String> {
        symbols(tex)
            .into_iter()
            .map(|(s, _)| s.to_string())
            .collect()
    }

    #[test]
    fn a_symbol_is_a_letter_with_its_decorations_and_its_naming_subscript() {
        assert_eq!(
            names("\\mathbf{S}_t = \\mathbf{S}_{t-1} + \\beta_t W_Q x"),
            [
                "\\mathbf{S}",
                "t",
                "\\mathbf{S}",
                "t",
                "\\beta",
                "t",
                "W_{Q}",
                "x"
            ]
        );
        assert_eq!(
            names("\\bar{\\boldsymbol{k}}_t^\\top \\hat{K} = T\\bar K"),
            ["\\bar{\\mathbf{k}}", "t", "\\hat{K}", "T", "\\bar{K}"]
        );
        assert_eq!(
            names("d_{\\text{model}} W_\\beta \\mathbf{w}_\\beta S_{ij}"),
            [
                "d_{\\text{model}}",
                "W_{\\beta}",
                "\\mathbf{w}",
                "\\beta",
                "S",
                "i",
                "j"
            ]
        );
    }

    #[test]
    fn operators_digits_text_and_functions_are_not_symbols() {
        assert_eq!(
            names(
                "\\operatorname{softmax}\\left(\\frac{QK^\\top}{\\sqrt{d}}\
                 \\right) \\exp(1) \\le 2\\,\\text{for all}\\quad \\mathbf{1} \
                 \\begin{pmatrix} a \\end{pmatrix} \\sum_{j=1}^{N} \\mathrm{d}"
            ),
            ["Q", "K", "d", "a", "j", "N"]
        );
        assert_eq!(
            names(
                "\\mathcal{O}(N^2) \\in \\mathbb{R}^{m\\times p} \\ell \\quad \\
                 e^{x} + \\mathbb{E}[\\mathbf{e}_i] + e"
            ),
            [
                "\\mathcal{O}",
                "N",
                "\\mathbb{R}",
                "m",
                "p",
                "\\ell",
                "x",
                "\\mathbf{e}",
                "i",
                "e"
            ]
        );
    }

    #[test]
    fn display_math_is_found_with_its_lines_outside_code() {
        let text = "Inline $a_t$ and `$$ not $$`.\n\n```\n$$\nb\n$$\n```\n\n\
                    $$\n\\mathbf{S}\n+ H_t\n$$\n\nand $$ c $$ too, \\$5.\n";
        let found: Vec<(String, usize)> = display_symbols("ch.md", text)
            .into_iter()
            .map(|u| (u.symbol.to_string(), u.line))
            .collect();
        assert_eq!(
            found,
            [
                ("\\mathbf{S}".to_string(), 10),
                ("H".to_string(), 11),
                ("t".to_string(), 11),
                ("c".to_string(), 14)
            ]
        );
        let all: Vec<bool> = math(text).iter().map(|m| m.2).collect();
        assert_eq!(all, [false, true, true]);
    }

    #[test]
    fn symbols_the_registry_lacks_are_listed_once_with_their_first_use() {
        let root = std::env::temp_dir()
            .join(format!("xtask-notation-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("src/appendix")).unwrap();
        fs::write(
            root.join("src/SUMMARY.md"),
            "- [A](a.md)\n- [B](b.md)\n- [N](appendix/notation.md)\n",
        )
        .unwrap();
        fs::write(
            root.join(REGISTRY),
            "| $\\mathbf{S}_t$ | memory |\n| $W_Q$ | slow |\n\n$$\nt\n$$\n",
        )
        .unwrap();
        fs::write(
            root.join("src/a.md"),
            "$$\n\\mathbf{S}_t = W_t + W_Q\n$$\n\nInline $Z$ is free.\n",
        )
        .unwrap();
        fs::write(root.join("src/b.md"), "Text.\n\n$$\nS W\n$$\n").unwrap();
        let found = missing(&root).unwrap();
        assert_eq!(
            report(&found),
            [
                "W  first in src/a.md:2 (2 chapters)",
                "S  first in src/b.md:4"
            ]
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
