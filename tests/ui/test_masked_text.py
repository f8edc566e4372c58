"""The Playground's sentence as the user edits it, without a window: the word at the cursor masked, and a mask
filled with a candidate, a continuing piece joined to the word before it."""

from mlm_studio.core.evaluation.predict import Candidate
from mlm_studio.ui.panels.playground.masked_text import MASK, with_candidate, with_mask, word_at

COPY = Candidate(token="copy", token_id=7, score=0.5, text="copy", continues=False)
ING = Candidate(token="##ing", token_id=8, score=0.2, text="ing", continues=True)


def test_the_word_at_the_cursor_is_found_from_its_start_to_its_end():
    text = "Return the list's last item."
    assert word_at(text, len("Return the li")) == (len("Return the "), len("list's"))
    assert word_at(text, len("Return the ")) == (len("Return the "), len("list's"))  # touching its start
    assert word_at(text, len("Return")) == (0, len("Return"))  # touching its end
    assert word_at("a  b", 2) is None  # between two spaces: no word


def test_a_masked_word_leaves_the_cursor_after_the_mask():
    text, cursor = with_mask("Return the list.", len("Return the "), len("list"))
    assert text == f"Return the {MASK}." and cursor == len(f"Return the {MASK}")


def test_a_candidate_fills_the_mask_it_was_chosen_for():
    text = f"a {MASK} b {MASK} c"
    assert with_candidate(text, 1, COPY) == f"a {MASK} b copy c"
    assert with_candidate(text, 0, COPY) == f"a copy b {MASK} c"


def test_a_continuing_piece_joins_the_word_before_it():
    assert with_candidate(f"the runn {MASK} dog", 0, ING) == "the running dog"


def test_a_mask_no_longer_in_the_text_is_not_filled():
    assert with_candidate(f"only {MASK} here", 1, COPY) is None
    assert with_candidate("no mask at all", 0, COPY) is None
