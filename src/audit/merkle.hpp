// The RFC 6962 (RFC 9162 section 2.1) Merkle tree: hashing, the append-only frontier, proof
// generation from stored subtree hashes, and the two proof verifiers.
//
//   leaf hash  = SHA-256(0x00 || record)
//   node hash  = SHA-256(0x01 || left || right)
//   empty root = SHA-256("")
//
// A "perfect subtree" (level h, index i) is the complete subtree over leaves
// [i * 2^h, (i + 1) * 2^h); level 0 is a leaf hash. Every other hash of the tree can be
// computed from O(log n) of them, which is what storage keeps.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <span>
#include <vector>

#include "audit/hash.hpp"
#include "common/result.hpp"

namespace airlock::audit {

Hash leaf_hash(ByteView record);
Hash node_hash(const Hash& left, const Hash& right);
Hash empty_tree_root();

// The right edge of a growing tree: one perfect-subtree hash per set bit of the size, left
// (largest) to right. Appending and computing the root are O(log n), with no reads.
class MerkleFrontier {
 public:
  // The perfect subtrees an append completed: heights 1..count, lowest first.
  struct Completed {
    std::array<Hash, 64> hashes;
    unsigned count = 0;
  };

  MerkleFrontier() = default;
  // From the perfect subtrees of a tree of `size` leaves, left to right; nullopt when their
  // number does not match popcount(size).
  static std::optional<MerkleFrontier> from_subtrees(std::uint64_t size, std::vector<Hash> subtrees);

  std::uint64_t size() const { return size_; }
  Completed append(const Hash& leaf);
  Hash root() const;
  const std::vector<Hash>& subtrees() const { return subtrees_; }

 private:
  std::uint64_t size_ = 0;
  std::vector<Hash> subtrees_;
};

// Where proof generation reads perfect-subtree hashes from (level, index as above).
using SubtreeLookup = std::function<Result<Hash>(unsigned level, std::uint64_t index)>;

// The (level, index) of each perfect subtree that makes up a tree of `size` leaves, left to
// right: the reads MerkleFrontier::from_subtrees needs.
std::vector<std::pair<unsigned, std::uint64_t>> frontier_subtree_positions(std::uint64_t size);

// The root of the tree over the first `size` leaves: O(log n) lookups.
Result<Hash> tree_root(std::uint64_t size, const SubtreeLookup& lookup);

// RFC 6962 section 2.1.1 PATH: the audit path for leaf `index` in a tree of `size` leaves.
Result<std::vector<Hash>> inclusion_proof(std::uint64_t index, std::uint64_t size,
                                          const SubtreeLookup& lookup);
// RFC 6962 section 2.1.2 PROOF: consistency between sizes 0 < size1 <= size2.
Result<std::vector<Hash>> consistency_proof(std::uint64_t size1, std::uint64_t size2,
                                            const SubtreeLookup& lookup);

// The exact number of hashes a valid proof has (its verifier rejects any other length).
std::size_t inclusion_proof_length(std::uint64_t index, std::uint64_t size);
std::size_t consistency_proof_length(std::uint64_t size1, std::uint64_t size2);

// RFC 9162 section 2.1.3.2 and 2.1.4.2. The inputs are raw bytes as a third party received
// them: a hash of the wrong length is an error, never truncated or padded. An error (code
// "proof_invalid") says what does not hold.
Status verify_inclusion(std::uint64_t index, std::uint64_t size, ByteView leaf,
                        std::span<const ByteView> proof, ByteView root);
Status verify_consistency(std::uint64_t size1, std::uint64_t size2,
                          std::span<const ByteView> proof, ByteView root1, ByteView root2);

// The same, for proofs this module produced.
Status verify_inclusion(std::uint64_t index, std::uint64_t size, const Hash& leaf,
                        const std::vector<Hash>& proof, const Hash& root);
Status verify_consistency(std::uint64_t size1, std::uint64_t size2,
                          const std::vector<Hash>& proof, const Hash& root1, const Hash& root2);

}  // namespace airlock::audit
