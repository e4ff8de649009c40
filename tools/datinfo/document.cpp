#include "document.hpp"

namespace datinfo {

Node &Node::set(const std::string &key, Node value) {
    for (auto &item : items_)
        if (item.first == key) return item.second = std::move(value);
    items_.emplace_back(key, std::move(value));
    return items_.back().second;
}

const Node *Node::find(const std::string &key) const noexcept {
    for (const auto &item : items_)
        if (item.first == key) return &item.second;
    return nullptr;
}

Node &Node::push(Node value) {
    elements_.push_back(std::move(value));
    return elements_.back();
}

}  // namespace datinfo
