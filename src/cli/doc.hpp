// A tiny document model for reports that are printed both for a terminal and as Markdown
// (delta, history): headings, paragraphs, bullets and tables, rendered by one of two backends.
#pragma once

#include <string>
#include <vector>

namespace cudatool::cli {

class Doc {
 public:
  explicit Doc(bool markdown) : md_(markdown) {}
  void heading(int level, const std::string& text);
  void para(const std::string& text);
  void bullet(const std::string& text, int depth = 0);
  // right_align marks numeric columns.
  void table(const std::vector<std::string>& headers,
             const std::vector<std::vector<std::string>>& rows,
             const std::vector<bool>& right_align = {});
  [[nodiscard]] const std::string& str() const { return out_; }

 private:
  void gap();
  bool md_;
  std::string out_;
};

// `code` span in Markdown, plain in text.
std::string code(bool markdown, const std::string& s);

}  // namespace cudatool::cli
