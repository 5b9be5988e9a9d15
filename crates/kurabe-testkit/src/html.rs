//! A tag-balance check for the HTML pages and SVG charts kurabe writes:
//! enough to catch a renderer that forgets to close what it opens, without
//! an HTML parser in the build.

/// Open and close tags balance (void elements, `/>` and `<!…>` excepted);
/// the error names the first tag that does not.
pub fn balanced(html: &str) -> Result<(), String> {
    const VOID: &[&str] = &["meta", "br", "img", "input", "link", "hr"];
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let end = rest.find('>').ok_or("unclosed <")?;
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') {
            continue;
        }
        let name = tag_name(tag);
        if tag.starts_with('/') {
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else if !tag.ends_with('/') && !VOID.contains(&name.as_str()) {
            stack.push(name);
        }
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed {stack:?}"))
    }
}

/// The element name of a tag's text (between `<` and `>`), `/` stripped.
fn tag_name(tag: &str) -> String {
    tag.trim_start_matches('/')
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::balanced;

    #[test]
    fn well_formed_pages_pass() {
        let page = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head>\
                    <body><p>a<br>b</p><svg><rect x=\"1\"/><g><text>t</text></g></svg></body></html>";
        assert_eq!(balanced(page), Ok(()));
        assert_eq!(balanced("no tags at all"), Ok(()));
    }

    #[test]
    fn each_kind_of_damage_is_named() {
        assert_eq!(
            balanced("<p><b>x</p>"),
            Err("</p> closes Some(\"b\")".into())
        );
        assert_eq!(balanced("</p>"), Err("</p> closes None".into()));
        assert_eq!(balanced("<div><p>x</p>"), Err("unclosed [\"div\"]".into()));
        assert_eq!(balanced("<p>x</p"), Err("unclosed <".into()));
    }
}
