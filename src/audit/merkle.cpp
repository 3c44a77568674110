#include "audit/merkle.hpp"

#include <algorithm>
#include <bit>
#include <string>

namespace airlock::audit {
namespace {

constexpr std::uint8_t kLeafPrefix = 0x00;
constexpr std::uint8_t kNodePrefix = 0x01;

Error proof_error(std::string message) {
  return Error::make("proof_invalid", std::move(message));
}

// The largest power of two strictly below n (n >= 2): where RFC 6962 splits a tree.
std::uint64_t split_point(std::uint64_t n) { return std::bit_floor(n - 1); }

bool equal_bytes(ByteView a, ByteView b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// MTH over leaves [start, start + count). In every range the recursions below visit, `start`
// is a multiple of the largest power of two not above `count`, so the left parts are perfect
// subtrees.
Result<Hash> range_hash(std::uint64_t start, std::uint64_t count, const SubtreeLookup& lookup) {
  if (std::has_single_bit(count)) {
    auto level = static_cast<unsigned>(std::countr_zero(count));
    return lookup(level, start >> level);
  }
  std::uint64_t k = split_point(count);
  auto left = lookup(static_cast<unsigned>(std::countr_zero(k)), start / k);
  if (!left) return left;
  auto right = range_hash(start + k, count - k, lookup);
  if (!right) return right;
  return node_hash(*left, *right);
}

// PATH(m, D[start : start + n]).
Status append_inclusion_path(std::uint64_t m, std::uint64_t start, std::uint64_t n,
                             const SubtreeLookup& lookup, std::vector<Hash>& out) {
  if (n == 1) return {};
  std::uint64_t k = split_point(n);
  Result<Hash> sibling = Error{};
  if (m < k) {
    if (auto status = append_inclusion_path(m, start, k, lookup, out); !status) return status;
    sibling = range_hash(start + k, n - k, lookup);
  } else {
    if (auto status = append_inclusion_path(m - k, start + k, n - k, lookup, out); !status)
      return status;
    sibling = range_hash(start, k, lookup);
  }
  if (!sibling) return sibling.error();
  out.push_back(*sibling);
  return {};
}

// SUBPROOF(m, D[start : start + n], b).
Status append_subproof(std::uint64_t m, std::uint64_t start, std::uint64_t n, bool complete,
                       const SubtreeLookup& lookup, std::vector<Hash>& out) {
  if (m == n) {
    if (complete) return {};
    auto hash = range_hash(start, n, lookup);
    if (!hash) return hash.error();
    out.push_back(*hash);
    return {};
  }
  std::uint64_t k = split_point(n);
  Result<Hash> sibling = Error{};
  if (m <= k) {
    if (auto status = append_subproof(m, start, k, complete, lookup, out); !status) return status;
    sibling = range_hash(start + k, n - k, lookup);
  } else {
    if (auto status = append_subproof(m - k, start + k, n - k, false, lookup, out); !status)
      return status;
    sibling = range_hash(start, k, lookup);
  }
  if (!sibling) return sibling.error();
  out.push_back(*sibling);
  return {};
}

Hash copy_hash(ByteView bytes) {
  Hash h{};
  std::copy(bytes.begin(), bytes.end(), h.begin());
  return h;
}

Status check_proof_hash_sizes(std::span<const ByteView> proof) {
  for (std::size_t i = 0; i < proof.size(); ++i)
    if (proof[i].size() != kHashSize)
      return proof_error("proof hash " + std::to_string(i) + " is " +
                         std::to_string(proof[i].size()) + " bytes, not 32");
  return {};
}

// Shifts fn and sn right together until fn's lowest bit is set or fn is 0.
void shift_to_odd_or_zero(std::uint64_t& fn, std::uint64_t& sn) {
  while ((fn & 1) == 0 && fn != 0) {
    fn >>= 1;
    sn >>= 1;
  }
}

std::vector<ByteView> views_of(const std::vector<Hash>& proof) {
  std::vector<ByteView> views;
  views.reserve(proof.size());
  for (const Hash& h : proof) views.emplace_back(h);
  return views;
}

}  // namespace

Hash leaf_hash(ByteView record) {
  const std::uint8_t prefix = kLeafPrefix;
  return sha256({ByteView(&prefix, 1), record});
}

Hash node_hash(const Hash& left, const Hash& right) {
  const std::uint8_t prefix = kNodePrefix;
  return sha256({ByteView(&prefix, 1), ByteView(left), ByteView(right)});
}

Hash empty_tree_root() { return sha256(ByteView{}); }

std::optional<MerkleFrontier> MerkleFrontier::from_subtrees(std::uint64_t size,
                                                            std::vector<Hash> subtrees) {
  if (subtrees.size() != static_cast<std::size_t>(std::popcount(size))) return std::nullopt;
  MerkleFrontier frontier;
  frontier.size_ = size;
  frontier.subtrees_ = std::move(subtrees);
  return frontier;
}

MerkleFrontier::Completed MerkleFrontier::append(const Hash& leaf) {
  Completed completed;
  Hash hash = leaf;
  // Each set low bit of the old size is a perfect subtree the new leaf's subtree now pairs with.
  for (std::uint64_t size = size_; size & 1; size >>= 1) {
    hash = node_hash(subtrees_.back(), hash);
    subtrees_.pop_back();
    completed.hashes[completed.count++] = hash;
  }
  subtrees_.push_back(hash);
  ++size_;
  return completed;
}

Hash MerkleFrontier::root() const {
  if (subtrees_.empty()) return empty_tree_root();
  Hash root = subtrees_.back();
  for (auto it = subtrees_.rbegin() + 1; it != subtrees_.rend(); ++it) root = node_hash(*it, root);
  return root;
}

std::vector<std::pair<unsigned, std::uint64_t>> frontier_subtree_positions(std::uint64_t size) {
  std::vector<std::pair<unsigned, std::uint64_t>> positions;
  std::uint64_t start = 0;
  for (int level = 63; level >= 0; --level) {
    std::uint64_t width = std::uint64_t{1} << level;
    if (size & width) {
      positions.emplace_back(static_cast<unsigned>(level), start >> level);
      start += width;
    }
  }
  return positions;
}

Result<Hash> tree_root(std::uint64_t size, const SubtreeLookup& lookup) {
  if (size == 0) return empty_tree_root();
  return range_hash(0, size, lookup);
}

Result<std::vector<Hash>> inclusion_proof(std::uint64_t index, std::uint64_t size,
                                          const SubtreeLookup& lookup) {
  if (index >= size)
    return Error::make("invalid_argument", "leaf index " + std::to_string(index) +
                                               " is not below tree size " + std::to_string(size));
  std::vector<Hash> proof;
  if (auto status = append_inclusion_path(index, 0, size, lookup, proof); !status)
    return status.error();
  return proof;
}

Result<std::vector<Hash>> consistency_proof(std::uint64_t size1, std::uint64_t size2,
                                            const SubtreeLookup& lookup) {
  if (size1 == 0 || size1 > size2)
    return Error::make("invalid_argument", "a consistency proof needs 0 < size1 <= size2, got " +
                                               std::to_string(size1) + " and " +
                                               std::to_string(size2));
  std::vector<Hash> proof;
  if (size1 == size2) return proof;
  if (auto status = append_subproof(size1, 0, size2, true, lookup, proof); !status)
    return status.error();
  return proof;
}

std::size_t inclusion_proof_length(std::uint64_t index, std::uint64_t size) {
  // Below the point where the paths to `index` and to the last leaf part, every level has a
  // sibling ("inner"); above it, one for each left-hand subtree on the right border.
  auto inner = static_cast<unsigned>(std::bit_width(index ^ (size - 1)));
  auto border = static_cast<unsigned>(std::popcount(index >> inner));
  return inner + border;
}

std::size_t consistency_proof_length(std::uint64_t size1, std::uint64_t size2) {
  if (size1 == 0 || size1 >= size2) return 0;
  // The proof is the inclusion proof of the subtree that ends the old tree (at the level of
  // size1's lowest set bit), preceded by that subtree's own hash unless it is the old root.
  auto level = static_cast<unsigned>(std::countr_zero(size1));
  std::uint64_t index = (size1 - 1) >> level;
  std::uint64_t last = (size2 - 1) >> level;
  auto inner = static_cast<unsigned>(std::bit_width(index ^ last));
  auto border = static_cast<unsigned>(std::popcount(index >> inner));
  return inner + border + (index != 0 ? 1 : 0);
}

Status verify_inclusion(std::uint64_t index, std::uint64_t size, ByteView leaf,
                        std::span<const ByteView> proof, ByteView root) {
  if (index >= size)
    return proof_error("leaf index " + std::to_string(index) + " is not below tree size " +
                       std::to_string(size));
  if (leaf.size() != kHashSize)
    return proof_error("leaf hash is " + std::to_string(leaf.size()) + " bytes, not 32");
  std::size_t expected = inclusion_proof_length(index, size);
  if (proof.size() != expected)
    return proof_error("inclusion proof has " + std::to_string(proof.size()) +
                       " hashes; for leaf " + std::to_string(index) + " of " +
                       std::to_string(size) + " it has exactly " + std::to_string(expected));
  if (auto status = check_proof_hash_sizes(proof); !status) return status;

  std::uint64_t fn = index, sn = size - 1;
  Hash r = copy_hash(leaf);
  for (ByteView p : proof) {
    Hash sibling = copy_hash(p);
    if ((fn & 1) || fn == sn) {
      r = node_hash(sibling, r);
      shift_to_odd_or_zero(fn, sn);
    } else {
      r = node_hash(r, sibling);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn != 0) return proof_error("inclusion proof does not reach the root");
  if (!equal_bytes(ByteView(r), root))
    return proof_error("inclusion proof leads to root " + to_hex(r) + ", not the given root");
  return {};
}

Status verify_consistency(std::uint64_t size1, std::uint64_t size2,
                          std::span<const ByteView> proof, ByteView root1, ByteView root2) {
  if (size1 > size2)
    return proof_error("size1 " + std::to_string(size1) + " is above size2 " +
                       std::to_string(size2));
  // Everything is consistent with the empty tree, so a proof from it proves nothing; like the
  // reference verifier, refuse the question rather than answer "yes" to anything.
  if (size1 == 0) return proof_error("a consistency proof from the empty tree proves nothing");
  if (size1 == size2) {
    if (!proof.empty()) return proof_error("sizes are equal but the proof is not empty");
    if (!equal_bytes(root1, root2)) return proof_error("sizes are equal but the roots differ");
    return {};
  }
  std::size_t expected = consistency_proof_length(size1, size2);
  if (proof.size() != expected)
    return proof_error("consistency proof has " + std::to_string(proof.size()) +
                       " hashes; from " + std::to_string(size1) + " to " +
                       std::to_string(size2) + " it has exactly " + std::to_string(expected));
  if (auto status = check_proof_hash_sizes(proof); !status) return status;
  if (root1.size() != kHashSize || root2.size() != kHashSize)
    return proof_error("a root is not 32 bytes");

  // When size1 is a power of two the old root is itself the first node of the path.
  std::vector<Hash> path;
  path.reserve(proof.size() + 1);
  if (std::has_single_bit(size1)) path.push_back(copy_hash(root1));
  for (ByteView p : proof) path.push_back(copy_hash(p));

  std::uint64_t fn = size1 - 1, sn = size2 - 1;
  while (fn & 1) {
    fn >>= 1;
    sn >>= 1;
  }
  Hash fr = path.front(), sr = path.front();
  for (auto it = path.begin() + 1; it != path.end(); ++it) {
    if (sn == 0) return proof_error("consistency proof is longer than the tree is tall");
    if ((fn & 1) || fn == sn) {
      fr = node_hash(*it, fr);
      sr = node_hash(*it, sr);
      shift_to_odd_or_zero(fn, sn);
    } else {
      sr = node_hash(sr, *it);
    }
    fn >>= 1;
    sn >>= 1;
  }
  if (sn != 0) return proof_error("consistency proof does not reach the new root");
  if (!equal_bytes(ByteView(fr), root1))
    return proof_error("consistency proof does not lead to the old root");
  if (!equal_bytes(ByteView(sr), root2))
    return proof_error("consistency proof does not lead to the new root");
  return {};
}

Status verify_inclusion(std::uint64_t index, std::uint64_t size, const Hash& leaf,
                        const std::vector<Hash>& proof, const Hash& root) {
  auto views = views_of(proof);
  return verify_inclusion(index, size, ByteView(leaf), views, ByteView(root));
}

Status verify_consistency(std::uint64_t size1, std::uint64_t size2,
                          const std::vector<Hash>& proof, const Hash& root1, const Hash& root2) {
  auto views = views_of(proof);
  return verify_consistency(size1, size2, views, ByteView(root1), ByteView(root2));
}

}  // namespace airlock::audit
