package desktop

import (
	"cmp"
	"errors"

	"conch/backend/conversation"
	"conch/backend/tray"
)

// errNoAnswer is returned for a question picked in the tray when the
// window was given no way to answer it.
var errNoAnswer = errors.New("desktop: nothing answers questions from the tray")

// chatQuestions are the chats whose own question waits on the person, as
// tray menu items that can answer it.
func chatQuestions(chats []conversation.Conversation) []tray.Item {
	var items []tray.Item
	for _, c := range chats {
		if c.Ask == nil || c.Ask.Answer != "" {
			continue
		}
		items = append(items, tray.Item{TaskID: c.ID, Title: cmp.Or(c.Title, "New chat"), Chat: true,
			AskID: c.Ask.ID, Tool: c.Ask.Tool, Detail: c.Ask.Detail})
	}
	return items
}

// answer allows or denies a question picked in the tray: a task's through
// the task runner, a chat's through its chat, each with the question's id
// (a question settled meanwhile is refused with a conflict).
func (o Options) answer(it tray.Item, allow bool) error {
	switch {
	case it.Chat && o.AnswerChat != nil:
		return o.AnswerChat(it.TaskID, it.AskID, allow)
	case !it.Chat && o.AnswerTask != nil:
		return o.AnswerTask(it.TaskID, it.AskID, allow)
	}
	return errNoAnswer
}
