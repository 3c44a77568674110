// The RFC 6962 tree: known answers, the frontier against a direct recursive MTH, proofs
// generated and verified for every small tree, mutated proofs rejected, and every probe of
// the transparency-dev corpus (../shared/corpora/rfc6962).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "audit/merkle.hpp"

using namespace airlock::audit;

namespace {

std::string unhex(std::string_view hex) { return *from_hex(hex); }

// RFC 6962's MTH, written directly from the definition, as the reference for everything else.
Hash reference_root(const std::vector<Hash>& leaves, std::size_t begin, std::size_t end) {
  std::size_t n = end - begin;
  if (n == 0) return empty_tree_root();
  if (n == 1) return leaves[begin];
  std::size_t k = 1;
  while (k * 2 < n) k *= 2;
  return node_hash(reference_root(leaves, begin, begin + k), reference_root(leaves, begin + k, end));
}

// A SubtreeLookup over leaves held in memory, as storage would provide it.
struct MemoryTree {
  std::vector<Hash> leaves;

  explicit MemoryTree(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) leaves.push_back(leaf_hash(as_bytes("leaf " + std::to_string(i))));
  }
  SubtreeLookup lookup() const {
    return [this](unsigned level, std::uint64_t index) -> airlock::Result<Hash> {
      std::size_t begin = static_cast<std::size_t>(index << level);
      std::size_t end = begin + (std::size_t{1} << level);
      if (end > leaves.size()) return airlock::Error::make("not_found", "beyond the tree");
      return reference_root(leaves, begin, end);
    };
  }
  Hash root(std::size_t size) const { return reference_root(leaves, 0, size); }
};

// The RFC 6962 / certificate-transparency test vector: leaf inputs and the roots of the trees
// over their first 1..8 entries.
const std::vector<std::string> kVectorLeaves = {
    "", "00", "10", "2021", "3031", "40414243", "5051525354555657",
    "606162636465666768696a6b6c6d6e6f"};
const std::vector<std::string> kVectorRoots = {
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"};

}  // namespace

TEST(MerkleKnownAnswers, EmptyTreeRootIsSha256OfNothing) {
  EXPECT_EQ(to_hex(empty_tree_root()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(to_hex(MerkleFrontier().root()), to_hex(empty_tree_root()));
}

TEST(MerkleKnownAnswers, LeafAndNodeHashesUseDomainPrefixes) {
  // SHA-256(0x00) and SHA-256(0x01 || 32 zero bytes || 32 zero bytes).
  EXPECT_EQ(to_hex(leaf_hash({})),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
  EXPECT_EQ(to_hex(node_hash(Hash{}, Hash{})),
            to_hex(sha256(as_bytes(std::string(1, '\x01') + std::string(64, '\0')))));
}

TEST(MerkleKnownAnswers, RootsOfTheRfc6962TestVector) {
  MerkleFrontier frontier;
  for (std::size_t i = 0; i < kVectorLeaves.size(); ++i) {
    frontier.append(leaf_hash(as_bytes(unhex(kVectorLeaves[i]))));
    EXPECT_EQ(to_hex(frontier.root()), kVectorRoots[i]) << "tree of " << i + 1;
  }
}

TEST(MerkleFrontier, MatchesTheRecursiveDefinitionAndReportsCompletedSubtrees) {
  MemoryTree tree(300);
  MerkleFrontier frontier;
  for (std::size_t i = 0; i < tree.leaves.size(); ++i) {
    auto completed = frontier.append(tree.leaves[i]);
    // Leaf i completes one perfect subtree per trailing one bit of i.
    ASSERT_EQ(completed.count, static_cast<unsigned>(std::countr_one(i)));
    for (unsigned h = 1; h <= completed.count; ++h) {
      std::size_t begin = i + 1 - (std::size_t{1} << h);
      ASSERT_EQ(completed.hashes[h - 1], reference_root(tree.leaves, begin, i + 1));
    }
    ASSERT_EQ(frontier.root(), tree.root(i + 1)) << "size " << i + 1;
  }
}

TEST(MerkleFrontier, RebuildsFromStoredSubtrees) {
  MemoryTree tree(77);
  for (std::uint64_t size : {0, 1, 2, 5, 64, 77}) {
    std::vector<Hash> subtrees;
    for (auto [level, index] : frontier_subtree_positions(size))
      subtrees.push_back(*tree.lookup()(level, index));
    auto frontier = MerkleFrontier::from_subtrees(size, subtrees);
    ASSERT_TRUE(frontier);
    EXPECT_EQ(frontier->root(), tree.root(size));
    EXPECT_EQ(*tree_root(size, tree.lookup()), tree.root(size));
  }
  EXPECT_FALSE(MerkleFrontier::from_subtrees(3, {Hash{}}));  // 3 needs two subtrees
}

TEST(MerkleProofs, EveryInclusionProofOfSmallTreesVerifiesWithItsExactLength) {
  MemoryTree tree(70);
  for (std::uint64_t size = 1; size <= 70; ++size) {
    Hash root = tree.root(size);
    for (std::uint64_t index = 0; index < size; ++index) {
      auto proof = inclusion_proof(index, size, tree.lookup());
      ASSERT_TRUE(proof);
      ASSERT_EQ(proof->size(), inclusion_proof_length(index, size));
      ASSERT_TRUE(verify_inclusion(index, size, tree.leaves[index], *proof, root))
          << index << " of " << size;
    }
  }
}

TEST(MerkleProofs, EveryConsistencyProofOfSmallTreesVerifiesWithItsExactLength) {
  MemoryTree tree(70);
  for (std::uint64_t size2 = 1; size2 <= 70; ++size2) {
    for (std::uint64_t size1 = 1; size1 <= size2; ++size1) {
      auto proof = consistency_proof(size1, size2, tree.lookup());
      ASSERT_TRUE(proof);
      ASSERT_EQ(proof->size(), consistency_proof_length(size1, size2)) << size1 << "->" << size2;
      ASSERT_TRUE(verify_consistency(size1, size2, *proof, tree.root(size1), tree.root(size2)))
          << size1 << "->" << size2;
    }
  }
}

TEST(MerkleProofs, KnownInclusionPathFromTheTestVector) {
  // Leaf 0 of the 8-leaf vector tree: siblings leaf 1, node(2,3), node(4..7).
  std::vector<Hash> leaves;
  for (const auto& hex : kVectorLeaves) leaves.push_back(leaf_hash(as_bytes(unhex(hex))));
  MemoryTree tree(0);
  tree.leaves = leaves;
  auto proof = inclusion_proof(0, 8, tree.lookup());
  ASSERT_TRUE(proof);
  ASSERT_EQ(proof->size(), 3u);
  EXPECT_EQ((*proof)[0], leaves[1]);
  EXPECT_EQ((*proof)[1], node_hash(leaves[2], leaves[3]));
  EXPECT_EQ((*proof)[2], reference_root(leaves, 4, 8));
}

// Every way of damaging a valid proof must be rejected: a flipped bit in any hash, a hash
// dropped or added, a neighbouring index, another root, another size with that size's root.
// (Another size with the *same* root can pass when both trees give the path the same shape:
// the verifier cannot tell a leaf from a node. That is why a root is only ever trusted
// together with its size, in a signed checkpoint.)
TEST(MerkleProofs, DamagedInclusionProofsAreRejected) {
  MemoryTree tree(40);
  for (std::uint64_t size : {2, 3, 7, 8, 13, 32, 40}) {
    Hash root = tree.root(size);
    for (std::uint64_t index = 0; index < size; ++index) {
      auto proof = *inclusion_proof(index, size, tree.lookup());
      const Hash& leaf = tree.leaves[index];
      for (std::size_t i = 0; i < proof.size(); ++i) {
        auto flipped = proof;
        flipped[i][i % 32] ^= 0x01;
        EXPECT_FALSE(verify_inclusion(index, size, leaf, flipped, root));
      }
      auto shorter = proof;
      if (!shorter.empty()) {
        shorter.pop_back();
        EXPECT_FALSE(verify_inclusion(index, size, leaf, shorter, root));
      }
      auto longer = proof;
      longer.push_back(root);
      EXPECT_FALSE(verify_inclusion(index, size, leaf, longer, root));
      if (index + 1 < size) {
        EXPECT_FALSE(verify_inclusion(index + 1, size, leaf, proof, root));
      }
      EXPECT_FALSE(verify_inclusion(index, size + 1, leaf, proof, tree.root(size + 1)));
      EXPECT_FALSE(verify_inclusion(index, size, leaf, proof, tree.root(size - 1)));
      EXPECT_FALSE(verify_inclusion(index, size, tree.leaves[(index + 1) % size], proof, root));
    }
  }
}

TEST(MerkleProofs, DamagedConsistencyProofsAreRejected) {
  MemoryTree tree(40);
  for (std::uint64_t size2 : {3, 8, 13, 40}) {
    for (std::uint64_t size1 = 1; size1 < size2; ++size1) {
      auto proof = *consistency_proof(size1, size2, tree.lookup());
      Hash root1 = tree.root(size1), root2 = tree.root(size2);
      for (std::size_t i = 0; i < proof.size(); ++i) {
        auto flipped = proof;
        flipped[i][31 - i % 32] ^= 0x80;
        EXPECT_FALSE(verify_consistency(size1, size2, flipped, root1, root2));
      }
      auto shorter = proof;
      shorter.pop_back();
      EXPECT_FALSE(verify_consistency(size1, size2, shorter, root1, root2));
      auto longer = proof;
      longer.insert(longer.begin(), root1);
      EXPECT_FALSE(verify_consistency(size1, size2, longer, root1, root2));
      EXPECT_FALSE(verify_consistency(size1, size2, proof, root2, root1));
      EXPECT_FALSE(verify_consistency(size1, size2, proof, tree.root(size1 + 1), root2));
      EXPECT_FALSE(verify_consistency(size1 + 1, size2, proof, root1, root2));
      EXPECT_FALSE(verify_consistency(size1, size2 - 1, proof, root1, tree.root(size2 - 1)));
    }
  }
}

TEST(MerkleProofs, ProofLengthsAreCheckedExactlyBeforeAnyHashing) {
  MemoryTree tree(13);
  auto proof = *inclusion_proof(6, 13, tree.lookup());
  auto longer = proof;
  longer.push_back(tree.leaves[0]);
  auto status = verify_inclusion(6, 13, tree.leaves[6], longer, tree.root(13));
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("exactly " + std::to_string(proof.size())), std::string::npos)
      << status.error().message;
  auto consistency = *consistency_proof(5, 13, tree.lookup());
  consistency.pop_back();
  auto shorter = verify_consistency(5, 13, consistency, tree.root(5), tree.root(13));
  ASSERT_FALSE(shorter);
  EXPECT_NE(shorter.error().message.find("exactly"), std::string::npos) << shorter.error().message;
}

TEST(MerkleProofs, ProofHashesOfTheWrongSizeAreRejected) {
  MemoryTree tree(13);
  auto proof = *consistency_proof(5, 13, tree.lookup());
  Hash root1 = tree.root(5), root2 = tree.root(13);
  for (std::size_t size : {31u, 33u, 0u}) {
    std::vector<std::string> bytes;
    for (const Hash& h : proof) bytes.emplace_back(reinterpret_cast<const char*>(h.data()), h.size());
    bytes[1].resize(size, '\0');
    std::vector<ByteView> views;
    for (const auto& b : bytes) views.push_back(as_bytes(b));
    auto status = verify_consistency(5, 13, views, ByteView(root1), ByteView(root2));
    ASSERT_FALSE(status);
    EXPECT_NE(status.error().message.find("not 32"), std::string::npos) << status.error().message;
    Hash leaf = tree.leaves[2];
    auto inclusion = *inclusion_proof(2, 13, tree.lookup());
    std::vector<std::string> ibytes;
    for (const Hash& h : inclusion) ibytes.emplace_back(reinterpret_cast<const char*>(h.data()), h.size());
    ibytes[0].resize(size, '\0');
    std::vector<ByteView> iviews;
    for (const auto& b : ibytes) iviews.push_back(as_bytes(b));
    auto inclusion_status = verify_inclusion(2, 13, ByteView(leaf), iviews, ByteView(root2));
    ASSERT_FALSE(inclusion_status);
    EXPECT_NE(inclusion_status.error().message.find("not 32"), std::string::npos);
  }
}

TEST(MerkleProofs, RefusesMeaninglessQuestions) {
  MemoryTree tree(4);
  EXPECT_FALSE(inclusion_proof(4, 4, tree.lookup()));
  EXPECT_FALSE(consistency_proof(0, 4, tree.lookup()));
  EXPECT_FALSE(consistency_proof(3, 2, tree.lookup()));
  EXPECT_FALSE(verify_inclusion(0, 0, tree.leaves[0], {}, empty_tree_root()));
  // Equal sizes: empty proof and equal roots, nothing else.
  EXPECT_TRUE(verify_consistency(4, 4, {}, tree.root(4), tree.root(4)));
  EXPECT_FALSE(verify_consistency(4, 4, {tree.leaves[0]}, tree.root(4), tree.root(4)));
  EXPECT_FALSE(verify_consistency(4, 4, {}, tree.root(4), tree.root(3)));
}

// ---- The transparency-dev corpus ------------------------------------------------------------

namespace {

std::string decode_base64(const std::string& text) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    auto position = kAlphabet.find(c);
    if (position == std::string::npos) throw std::runtime_error("bad base64 in corpus: " + text);
    buffer = (buffer << 6) | static_cast<std::uint32_t>(position);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return out;
}

struct DecodedProof {
  std::vector<std::string> bytes;
  std::vector<ByteView> views;
};

DecodedProof decode_proof(const nlohmann::json& proof) {
  DecodedProof out;
  if (proof.is_array())
    for (const auto& node : proof) out.bytes.push_back(decode_base64(node.get<std::string>()));
  for (const auto& b : out.bytes) out.views.push_back(as_bytes(b));
  return out;
}

std::filesystem::path corpus_dir() { return AIRLOCK_RFC6962_CORPUS; }

std::vector<std::filesystem::path> corpus_files(const std::string& kind) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus_dir() / kind))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

class Rfc6962Corpus : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(corpus_dir()))
      GTEST_SKIP() << "RFC 6962 corpus not found at " << corpus_dir()
                   << " (expected ../shared/corpora/rfc6962 beside the checkout)";
  }
};

TEST_F(Rfc6962Corpus, InclusionProbes) {
  int accepted = 0, rejected = 0;
  for (const auto& file : corpus_files("inclusion")) {
    auto probe = read_json(file);
    std::string leaf = decode_base64(probe["leafHash"].get<std::string>());
    std::string root = decode_base64(probe["root"].get<std::string>());
    auto proof = decode_proof(probe["proof"]);
    airlock::Status status =
        verify_inclusion(probe["leafIdx"].get<std::uint64_t>(), probe["treeSize"].get<std::uint64_t>(),
                         as_bytes(leaf), proof.views, as_bytes(root));
    bool want_error = probe["wantErr"].get<bool>();
    EXPECT_EQ(status.ok(), !want_error)
        << file << ": " << probe["desc"] << (status.ok() ? "" : ": " + status.error().message);
    (want_error ? rejected : accepted)++;
  }
  // A glob that matched nothing must not pass: the corpus has 5 happy paths and 80+ probes.
  EXPECT_GE(accepted, 5);
  EXPECT_GE(rejected, 80);
  std::cout << "inclusion probes: " << accepted << " accepted, " << rejected << " rejected\n";
}

TEST_F(Rfc6962Corpus, ConsistencyProbes) {
  int accepted = 0, rejected = 0;
  for (const auto& file : corpus_files("consistency")) {
    auto probe = read_json(file);
    std::string root1 = decode_base64(probe["root1"].get<std::string>());
    std::string root2 = decode_base64(probe["root2"].get<std::string>());
    auto proof = decode_proof(probe["proof"]);
    airlock::Status status =
        verify_consistency(probe["size1"].get<std::uint64_t>(), probe["size2"].get<std::uint64_t>(),
                           proof.views, as_bytes(root1), as_bytes(root2));
    bool want_error = probe["wantErr"].get<bool>();
    EXPECT_EQ(status.ok(), !want_error)
        << file << ": " << probe["desc"] << (status.ok() ? "" : ": " + status.error().message);
    (want_error ? rejected : accepted)++;
  }
  EXPECT_GE(accepted, 5);
  EXPECT_GE(rejected, 80);
  std::cout << "consistency probes: " << accepted << " accepted, " << rejected << " rejected\n";
}
