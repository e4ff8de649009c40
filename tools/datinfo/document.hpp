// The report datinfo builds before printing it: a small tree of maps, lists and scalars, so
// that the text, YAML and JSON outputs are three renderings of one and the same content.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace datinfo {

class Node {
  public:
    enum class Kind { Null, Bool, Int, String, Map, List };

    Node() = default;  // null
    static Node map() { return Node(Kind::Map); }
    static Node list() { return Node(Kind::List); }
    Node(bool b) : kind_(Kind::Bool), bool_(b) {}
    Node(int v) : kind_(Kind::Int), int_(v) {}
    Node(unsigned v) : kind_(Kind::Int), int_(v) {}
    Node(long v) : kind_(Kind::Int), int_(v) {}
    Node(long long v) : kind_(Kind::Int), int_(v) {}
    // Unsigned 64-bit values above INT64_MAX (masks, addresses) are shown as hex strings by
    // the callers; here they are stored as signed, which only those callers could misuse.
    Node(unsigned long v) : kind_(Kind::Int), int_(static_cast<long long>(v)) {}
    Node(unsigned long long v) : kind_(Kind::Int), int_(static_cast<long long>(v)) {}
    Node(std::string s) : kind_(Kind::String), text_(std::move(s)) {}
    Node(const char *s) : kind_(Kind::String), text_(s ? s : "") {}

    Kind kind() const noexcept { return kind_; }
    bool as_bool() const noexcept { return bool_; }
    long long as_int() const noexcept { return int_; }
    const std::string &as_string() const noexcept { return text_; }

    // Map: keys keep insertion order (the order a reader expects), a repeated key replaces.
    Node &set(const std::string &key, Node value);
    const Node *find(const std::string &key) const noexcept;
    const std::vector<std::pair<std::string, Node>> &items() const noexcept { return items_; }

    // List
    Node &push(Node value);
    const std::vector<Node> &elements() const noexcept { return elements_; }

    bool empty() const noexcept { return items_.empty() && elements_.empty(); }

  private:
    explicit Node(Kind k) : kind_(k) {}

    Kind kind_ = Kind::Null;
    bool bool_ = false;
    long long int_ = 0;
    std::string text_;
    std::vector<std::pair<std::string, Node>> items_;
    std::vector<Node> elements_;
};

}  // namespace datinfo
