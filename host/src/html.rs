//! Text placed into HTML by the server (the dashboard's shell and login page, the
//! registry server's pages): escaped here, in one place.

/// Escapes text for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Fills `{{name}}` placeholders in one pass over `template`: a value is inserted as
/// given (escape it first unless it is markup of the server's own) and never scanned
/// again, so a value that contains `{{other}}` stays text. A placeholder without a
/// value is left as it is.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let value = after.find("}}").and_then(|end| {
            let name = &after[..end];
            values
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value, end + 2))
        });
        match value {
            Some((value, used)) => {
                out.push_str(value);
                rest = &after[used..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_are_filled_once_and_values_never_rescanned() {
        let template = r#"<input value="{{next}}">{{error}}{{unknown}}"#;
        let filled = super::fill(template, &[("next", "/{{error}}"), ("error", "<p>e</p>")]);
        assert_eq!(filled, r#"<input value="/{{error}}"><p>e</p>{{unknown}}"#);
        assert_eq!(super::fill("{{a}} {{", &[("a", "{{a}}")]), "{{a}} {{");
    }

    #[test]
    fn markup_and_quotes_are_neutralised() {
        assert_eq!(
            super::escape(r#"<script>"x" & 'y'</script>"#),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }
}
