#pragma once
// The ADTs the tests of recursive Relay functions declare their functions over, as the head of a
// Relay program: binary trees and lists (9 lines), or lists, rose trees and the standard @map and
// @foldl (20 lines).

namespace grove::relay::testing {

inline constexpr char kTreeTypes[] = R"(#[version = "0.0.5"]
type Tree[A] {
  Leaf(A),
  Node(Tree[A], Tree[A]),
}
type List[A] {
  Cons(A, List[A]),
  Nil,
}
)";

inline constexpr char kRoseTypes[] = R"(#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
type Rose[A] {
  Rose(A, List[Rose[A]]),
}
def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}
def @foldl[A, B](%f: fn (A, B) -> A, %acc: A, %xs: List[B]) -> A {
  match (%xs) {
    Cons(%x, %rest) => @foldl(%f, %f(%acc, %x), %rest),
    Nil => %acc,
  }
}
)";

}  // namespace grove::relay::testing
