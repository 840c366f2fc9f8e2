#include "cli/doc.hpp"

#include "cli/common.hpp"

namespace cudatool::cli {

void Doc::gap() {
  if (!out_.empty() && out_.back() == '\n' && (out_.size() < 2 || out_[out_.size() - 2] != '\n')) {
    out_ += '\n';
  }
}

void Doc::heading(int level, const std::string& text) {
  gap();
  if (md_) {
    out_ += std::string(static_cast<size_t>(level), '#') + " " + text + "\n\n";
  } else {
    out_ += text + "\n" + std::string(text.size() > 78 ? 78 : text.size(), level <= 1 ? '=' : '-') +
            "\n";
  }
}

void Doc::para(const std::string& text) {
  gap();
  out_ += text + "\n";
}

void Doc::bullet(const std::string& text, int depth) {
  out_ += std::string(static_cast<size_t>(depth) * 2, ' ') + "- " + text + "\n";
}

void Doc::table(const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  gap();
  if (!md_) {
    TextTable t(headers, right);
    for (const auto& r : rows) t.add(r);
    out_ += t.render("  ");
    return;
  }
  out_ += "|";
  for (const auto& h : headers) out_ += " " + h + " |";
  out_ += "\n|";
  for (size_t i = 0; i < headers.size(); ++i)
    out_ += (i < right.size() && right[i]) ? "---:|" : "---|";
  out_ += "\n";
  for (const auto& r : rows) {
    out_ += "|";
    for (const auto& c : r) {
      std::string cell = c;
      for (size_t p = 0; (p = cell.find('|', p)) != std::string::npos; p += 2)
        cell.replace(p, 1, "\\|");
      out_ += " " + cell + " |";
    }
    out_ += "\n";
  }
}

std::string code(bool markdown, const std::string& s) {
  return markdown ? "`" + s + "`" : s;
}

}  // namespace cudatool::cli
