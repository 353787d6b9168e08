//! A table of the report, written once and rendered twice: as Markdown
//! for `report.md` and as HTML for `index.html`. The first column holds
//! names (left-aligned), the others figures (right-aligned).

use std::fmt::Write as _;

/// How a cell is set off.
#[derive(Clone, Copy, PartialEq)]
pub enum Emphasis {
    Plain,
    /// The best figure, or a warning.
    Strong,
    /// A reference row's name.
    Italic,
}

pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<(String, Emphasis)>>,
}

impl Table {
    pub fn new(header: Vec<String>) -> Self {
        Self {
            header,
            rows: Vec::new(),
        }
    }

    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = write!(out, "|");
        for cell in &self.header {
            let _ = write!(out, " {cell} |");
        }
        out.push_str("\n|---|");
        for _ in 1..self.header.len() {
            out.push_str("---:|");
        }
        out.push('\n');
        for row in &self.rows {
            out.push('|');
            for (text, emphasis) in row {
                match emphasis {
                    Emphasis::Plain => {
                        let _ = write!(out, " {text} |");
                    }
                    Emphasis::Strong => {
                        let _ = write!(out, " **{text}** |");
                    }
                    Emphasis::Italic => {
                        let _ = write!(out, " *{text}* |");
                    }
                }
            }
            out.push('\n');
        }
        out
    }

    /// The HTML table; larder's rows (their name starts with `larder`)
    /// carry the class `larder`.
    pub fn html(&self) -> String {
        let mut out = String::from("<table>\n<thead><tr>");
        for (i, cell) in self.header.iter().enumerate() {
            let class = if i == 0 { "" } else { " class=\"num\"" };
            let _ = write!(out, "<th{class}>{}</th>", escape(cell));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            let larder = row
                .first()
                .is_some_and(|(name, _)| super::chart::is_larder(name));
            out.push_str(if larder {
                "<tr class=\"larder\">"
            } else {
                "<tr>"
            });
            for (i, (text, emphasis)) in row.iter().enumerate() {
                let class = if i == 0 { "" } else { " class=\"num\"" };
                let text = escape(text);
                let text = match emphasis {
                    Emphasis::Plain => text,
                    Emphasis::Strong => format!("<strong>{text}</strong>"),
                    Emphasis::Italic => format!("<em>{text}</em>"),
                };
                let _ = write!(out, "<td{class}>{text}</td>");
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
        out
    }
}

/// `text` with HTML's special characters escaped.
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

#[cfg(test)]
mod tests {
    use super::{Emphasis, Table};

    #[test]
    fn one_table_two_renderings() {
        let mut table = Table::new(vec!["contender".into(), "1 thread".into()]);
        table.rows.push(vec![
            ("larder Snapshot::load".into(), Emphasis::Plain),
            ("74.1".into(), Emphasis::Strong),
        ]);
        table.rows.push(vec![
            ("RwLock<Arc<T>>".into(), Emphasis::Italic),
            ("9 & 1".into(), Emphasis::Plain),
        ]);
        assert_eq!(
            table.markdown(),
            "| contender | 1 thread |\n|---|---:|\n| larder Snapshot::load | **74.1** |\n\
             | *RwLock<Arc<T>>* | 9 & 1 |\n"
        );
        let html = table.html();
        assert!(html.contains("<tr class=\"larder\"><td>larder Snapshot::load</td>"));
        assert!(html.contains("<td class=\"num\"><strong>74.1</strong></td>"));
        assert!(html.contains("<td><em>RwLock&lt;Arc&lt;T&gt;&gt;</em></td>"));
        assert!(html.contains("9 &amp; 1"));
    }
}
