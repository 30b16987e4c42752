//! Sections: the built-in Pinned one and those people create, and which thread is in which,
//! at what position.

use keel_protocol::ConversationId;
use keel_protocol::app_server::{ThreadSection, ThreadSectionAppearance};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{ThreadOrganizer, ThreadOrganizerError, now};

/// The built-in Pinned section's id: the same in every Keel home (and Codex home), so
/// clients can recognise it.
pub const PINNED_SECTION_ID: &str = "01984de2-8f74-7c91-a3b2-5c5e937cf318";

/// The section a thread is in, and since when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionMembership {
    /// The section.
    pub section: ThreadSection,
    /// When the thread entered it, Unix seconds.
    pub entered_at: i64,
}

fn pinned() -> ThreadSection {
    ThreadSection {
        id: PINNED_SECTION_ID.to_string(),
        name: "Pinned".to_string(),
        appearance: None,
    }
}

impl ThreadOrganizer {
    /// Every section: Pinned first, then the others in creation order. Blocking.
    pub fn sections(&self) -> Result<Vec<ThreadSection>, ThreadOrganizerError> {
        let db = self.lock();
        let mut statement = db
            .prepare_cached("SELECT id, name, appearance FROM sections ORDER BY rowid")
            .map_err(|err| self.fail(err))?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(|err| self.fail(err))?;
        let mut found = vec![pinned()];
        for row in rows {
            let (id, name, appearance) = row.map_err(|err| self.fail(err))?;
            found.push(ThreadSection {
                id,
                name,
                appearance: self.appearance(appearance)?,
            });
        }
        Ok(found)
    }

    /// Section `id`, if there is one. Blocking.
    pub fn section(&self, id: &str) -> Result<Option<ThreadSection>, ThreadOrganizerError> {
        if id == PINNED_SECTION_ID {
            return Ok(Some(pinned()));
        }
        let row = self
            .lock()
            .query_row(
                "SELECT name, appearance FROM sections WHERE id = ?1",
                [id],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?)),
            )
            .optional()
            .map_err(|err| self.fail(err))?;
        row.map(|(name, appearance)| {
            Ok(ThreadSection {
                id: id.to_string(),
                name,
                appearance: self.appearance(appearance)?,
            })
        })
        .transpose()
    }

    /// Creates a section (names may repeat). Blocking.
    pub fn create_section(
        &self,
        name: &str,
        appearance: Option<ThreadSectionAppearance>,
    ) -> Result<ThreadSection, ThreadOrganizerError> {
        if name.is_empty() {
            return Err(ThreadOrganizerError::EmptySectionName);
        }
        let section = ThreadSection {
            id: uuid::Uuid::now_v7().to_string(),
            name: name.to_string(),
            appearance,
        };
        let appearance = self.encode_appearance(section.appearance.as_ref())?;
        self.lock()
            .execute(
                "INSERT INTO sections(id, name, appearance) VALUES (?1, ?2, ?3)",
                params![section.id, section.name, appearance],
            )
            .map_err(|err| self.fail(err))?;
        Ok(section)
    }

    /// Renames a section and replaces its appearance. Blocking.
    pub fn update_section(
        &self,
        id: &str,
        name: &str,
        appearance: Option<ThreadSectionAppearance>,
    ) -> Result<ThreadSection, ThreadOrganizerError> {
        if id == PINNED_SECTION_ID {
            return Err(ThreadOrganizerError::PinnedSection("renamed"));
        }
        if name.is_empty() {
            return Err(ThreadOrganizerError::EmptySectionName);
        }
        let encoded = self.encode_appearance(appearance.as_ref())?;
        let changed = self
            .lock()
            .execute(
                "UPDATE sections SET name = ?2, appearance = ?3 WHERE id = ?1",
                params![id, name, encoded],
            )
            .map_err(|err| self.fail(err))?;
        if changed == 0 {
            return Err(ThreadOrganizerError::SectionNotFound(id.to_string()));
        }
        Ok(ThreadSection {
            id: id.to_string(),
            name: name.to_string(),
            appearance,
        })
    }

    /// Deletes a section; its threads become unsectioned. Blocking.
    pub fn delete_section(&self, id: &str) -> Result<(), ThreadOrganizerError> {
        if id == PINNED_SECTION_ID {
            return Err(ThreadOrganizerError::PinnedSection("deleted"));
        }
        let mut db = self.lock();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| self.fail(err))?;
        let removed = tx
            .execute("DELETE FROM sections WHERE id = ?1", [id])
            .map_err(|err| self.fail(err))?;
        if removed == 0 {
            return Err(ThreadOrganizerError::SectionNotFound(id.to_string()));
        }
        tx.execute("DELETE FROM section_members WHERE section_id = ?1", [id])
            .map_err(|err| self.fail(err))?;
        tx.commit().map_err(|err| self.fail(err))
    }

    /// Moves `thread` into `section` (before `before`, or at its end), or out of every
    /// section with `None`. Blocking.
    pub fn move_thread(
        &self,
        thread: ConversationId,
        section: Option<&str>,
        before: Option<ConversationId>,
    ) -> Result<(), ThreadOrganizerError> {
        let thread = thread.to_string();
        let Some(section) = section else {
            self.lock()
                .execute(
                    "DELETE FROM section_members WHERE thread_id = ?1",
                    [&thread],
                )
                .map_err(|err| self.fail(err))?;
            return Ok(());
        };
        if self.section(section)?.is_none() {
            return Err(ThreadOrganizerError::SectionNotFound(section.to_string()));
        }
        let mut db = self.lock();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|err| self.fail(err))?;
        // Re-entering the same section keeps its entry time.
        let entered_at: Option<i64> = tx
            .query_row(
                "SELECT entered_at FROM section_members WHERE thread_id = ?1 AND section_id = ?2",
                params![thread, section],
                |row| row.get(0),
            )
            .optional()
            .map_err(|err| self.fail(err))?;
        tx.execute(
            "DELETE FROM section_members WHERE thread_id = ?1",
            [&thread],
        )
        .map_err(|err| self.fail(err))?;
        let position: i64 = match before {
            Some(before) => {
                let before = before.to_string();
                let position: Option<i64> = tx
                    .query_row(
                        "SELECT position FROM section_members
                         WHERE thread_id = ?1 AND section_id = ?2",
                        params![before, section],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(|err| self.fail(err))?;
                let Some(position) = position else {
                    return Err(ThreadOrganizerError::BeforeNotInSection {
                        before,
                        section: section.to_string(),
                    });
                };
                tx.execute(
                    "UPDATE section_members SET position = position + 1
                     WHERE section_id = ?1 AND position >= ?2",
                    params![section, position],
                )
                .map_err(|err| self.fail(err))?;
                position
            }
            None => tx
                .query_row(
                    "SELECT coalesce(max(position), -1) + 1 FROM section_members
                     WHERE section_id = ?1",
                    [section],
                    |row| row.get(0),
                )
                .map_err(|err| self.fail(err))?,
        };
        tx.execute(
            "INSERT INTO section_members(thread_id, section_id, position, entered_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![thread, section, position, entered_at.unwrap_or_else(now)],
        )
        .map_err(|err| self.fail(err))?;
        tx.commit().map_err(|err| self.fail(err))
    }

    /// The section `thread` is in. Blocking.
    pub fn membership(
        &self,
        thread: ConversationId,
    ) -> Result<Option<SectionMembership>, ThreadOrganizerError> {
        let row = self
            .lock()
            .query_row(
                "SELECT section_id, entered_at FROM section_members WHERE thread_id = ?1",
                [thread.to_string()],
                |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
            )
            .optional()
            .map_err(|err| self.fail(err))?;
        let Some((section, entered_at)) = row else {
            return Ok(None);
        };
        Ok(self.section(&section)?.map(|section| SectionMembership {
            section,
            entered_at,
        }))
    }

    /// The threads of section `id` in position order; of every section with `None`.
    /// Blocking.
    pub fn members(&self, id: Option<&str>) -> Result<Vec<ConversationId>, ThreadOrganizerError> {
        let db = self.lock();
        let mut statement = db
            .prepare_cached(
                "SELECT thread_id FROM section_members
                 WHERE ?1 IS NULL OR section_id = ?1 ORDER BY section_id, position",
            )
            .map_err(|err| self.fail(err))?;
        let rows = statement
            .query_map([id], |row| row.get::<_, String>(0))
            .map_err(|err| self.fail(err))?;
        let mut found = Vec::new();
        for row in rows {
            let id = row.map_err(|err| self.fail(err))?;
            if let Ok(id) = id.parse() {
                found.push(id);
            }
        }
        Ok(found)
    }

    fn appearance(
        &self,
        stored: Option<String>,
    ) -> Result<Option<ThreadSectionAppearance>, ThreadOrganizerError> {
        stored
            .map(|text| serde_json::from_str(&text).map_err(|err| self.unreadable(err)))
            .transpose()
    }

    fn encode_appearance(
        &self,
        appearance: Option<&ThreadSectionAppearance>,
    ) -> Result<Option<String>, ThreadOrganizerError> {
        appearance
            .map(|appearance| serde_json::to_string(appearance).map_err(|err| self.unreadable(err)))
            .transpose()
    }
}
