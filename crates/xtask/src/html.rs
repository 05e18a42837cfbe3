//! Just enough HTML reading for the build's checks: the start and end tags
//! of a page with their attributes, in order. mdBook writes well-formed
//! HTML, so a small scanner does; it skips comments and the insides of
//! `<script>` and `<style>`, and decodes the entities mdBook writes in
//! attribute values.

/// One start or end tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// Lower-case element name, e.g. `a`, `h2`, `svg`.
    pub name: String,
    /// True for `</name>`.
    pub closing: bool,
    /// Attributes in order, names lower-cased, values decoded.
    pub attrs: Vec<(String, String)>,
    /// Byte offset of the `<` in the page.
    pub start: usize,
    /// Byte offset just past the `>`.
    pub end: usize,
}

impl Tag {
    /// The value of attribute `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// True if the `class` attribute lists `class`.
    pub fn has_class(&self, class: &str) -> bool {
        self.attr("class")
            .is_some_and(|c| c.split_whitespace().any(|c| c == class))
    }
}

/// Every tag of `html`, in document order.
pub fn tags(html: &str) -> Vec<Tag> {
    let bytes = html.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = html[i..].find('<') {
        let start = i + off;
        let rest = &html[start..];
        if rest.starts_with("<!--") {
            i = match rest.find("-->") {
                Some(e) => start + e + 3,
                None => html.len(),
            };
            continue;
        }
        let closing = rest.starts_with("</");
        let name_start = start + if closing { 2 } else { 1 };
        let name_len = html[name_start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(html.len() - name_start);
        if name_len == 0
            || !bytes[name_start].is_ascii_alphabetic()
            || rest.starts_with("<!")
        {
            // `<!DOCTYPE ...>`, a stray `<` in text: not a tag.
            i = start + 1;
            continue;
        }
        let name = html[name_start..name_start + name_len].to_ascii_lowercase();
        let (attrs, end) = attributes(html, name_start + name_len);
        let raw_text = !closing && (name == "script" || name == "style");
        let tag = Tag {
            name: name.clone(),
            closing,
            attrs,
            start,
            end,
        };
        out.push(tag);
        i = end;
        if raw_text {
            let close = format!("</{name}");
            i = match html[i..].to_ascii_lowercase().find(&close) {
                Some(e) => i + e,
                None => html.len(),
            };
        }
    }
    out
}

/// Parse attributes from `at` up to the tag's `>`. Returns them and the
/// offset just past the `>`.
fn attributes(html: &str, mut at: usize) -> (Vec<(String, String)>, usize) {
    let bytes = html.as_bytes();
    let mut attrs = Vec::new();
    loop {
        while at < bytes.len()
            && (bytes[at].is_ascii_whitespace() || bytes[at] == b'/')
        {
            at += 1;
        }
        if at >= bytes.len() {
            return (attrs, html.len());
        }
        if bytes[at] == b'>' {
            return (attrs, at + 1);
        }
        let name_start = at;
        while at < bytes.len()
            && !bytes[at].is_ascii_whitespace()
            && !matches!(bytes[at], b'=' | b'>' | b'/')
        {
            at += 1;
        }
        let name = html[name_start..at].to_ascii_lowercase();
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        let mut value = String::new();
        if at < bytes.len() && bytes[at] == b'=' {
            at += 1;
            while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                at += 1;
            }
            if at < bytes.len() && (bytes[at] == b'"' || bytes[at] == b'\'') {
                let quote = bytes[at] as char;
                let from = at + 1;
                let len = html[from..].find(quote).unwrap_or(html.len() - from);
                value = decode(&html[from..from + len]);
                at = (from + len + 1).min(html.len());
            } else {
                let from = at;
                while at < bytes.len()
                    && !bytes[at].is_ascii_whitespace()
                    && bytes[at] != b'>'
                {
                    at += 1;
                }
                value = decode(&html[from..at]);
            }
        }
        if name.is_empty() {
            at += 1;
        } else {
            attrs.push((name, value));
        }
    }
}

/// Decode the character references mdBook and pulldown-cmark write.
pub fn decode(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        // A reference is short: look for its `;` in the next 12 bytes
        // (whole characters: the text may be anything but ASCII).
        let near = rest.char_indices().take_while(|(i, _)| *i < 12);
        let Some((semi, _)) = near.into_iter().find(|(_, c)| *c == ';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..semi];
        let ch = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some('\u{a0}'),
            _ => entity.strip_prefix('#').and_then(|n| {
                let code = match n.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => n.parse().ok(),
                };
                code.and_then(char::from_u32)
            }),
        };
        match ch {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Decode `%XX` escapes in a URL path or fragment.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            if let Some(b) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The text of `html` between `from` and `to` with every tag removed and
/// entities decoded, whitespace collapsed.
pub fn text_between(html: &str, from: usize, to: usize) -> String {
    let mut out = String::new();
    let mut last = from;
    for tag in tags(&html[from..to]) {
        out.push_str(&html[last..from + tag.start]);
        out.push(' ');
        last = from + tag.end;
    }
    out.push_str(&html[last.min(to)..to]);
    decode(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_come_with_decoded_attributes_in_order() {
        let html = "<!DOCTYPE html><!-- <a href=\"no\"> --><p class=\"a b\" \
                    id='x'>1 &lt; 2</p><a href=\"p.html#a&amp;b\" hidden>x</a>\
                    <br/><script>if (a<b) {}</script><svg viewBox=0>";
        let tags = tags(html);
        let names: Vec<String> = tags
            .iter()
            .map(|t| format!("{}{}", if t.closing { "/" } else { "" }, t.name))
            .collect();
        assert_eq!(
            names,
            ["p", "/p", "a", "/a", "br", "script", "/script", "svg"]
        );
        assert!(tags[0].has_class("b"));
        assert_eq!(tags[0].attr("id"), Some("x"));
        assert_eq!(tags[2].attr("href"), Some("p.html#a&b"));
        assert_eq!(tags[2].attr("hidden"), Some(""));
        assert_eq!(tags[7].attr("viewbox"), Some("0"));
    }

    #[test]
    fn entities_and_percent_escapes_decode() {
        assert_eq!(decode("&#x3B1; &#946; &amp;amp; & x"), "α β &amp; & x");
        // A `&` before text that is not ASCII, no `;` near.
        assert_eq!(decode("&lt;s≤i} α_s & ααααααα;"), "<s≤i} α_s & ααααααα;");
        assert_eq!(percent_decode("a%20b%C3%A9%zz"), "a bé%zz");
    }

    #[test]
    fn text_between_drops_tags() {
        let html = "<p>Fast <em>weight</em>&nbsp;<b>x</b></p>";
        assert_eq!(text_between(html, 0, html.len()), "Fast weight x");
    }
}
