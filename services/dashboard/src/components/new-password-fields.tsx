/** The edge's lower bound for a new password (its 400 says the same); the field asks for it before a round trip. */
const MIN_PASSWORD = 10;

interface NewPasswordFieldsProps {
  /** Prefix of the two inputs' ids. */
  id: string;
  label: string;
  repeatLabel: string;
  /** Said after the length rule under the first field. */
  note?: string;
  password: string;
  confirm: string;
  onPassword: (value: string) => void;
  onConfirm: (value: string) => void;
}

/** A new password typed twice (the form compares the two before it sends one). */
export function NewPasswordFields(p: NewPasswordFieldsProps) {
  return (
    <>
      <div className="field">
        <label htmlFor={`${p.id}-password`}>{p.label}</label>
        <input
          id={`${p.id}-password`}
          className="input"
          type="password"
          autoComplete="new-password"
          minLength={MIN_PASSWORD}
          required
          aria-describedby={`${p.id}-password-hint`}
          value={p.password}
          onChange={(e) => p.onPassword(e.target.value)}
        />
        <span id={`${p.id}-password-hint`} className="muted small">
          At least {MIN_PASSWORD} characters.{p.note ? ` ${p.note}` : ''}
        </span>
      </div>
      <div className="field">
        <label htmlFor={`${p.id}-confirm`}>{p.repeatLabel}</label>
        <input
          id={`${p.id}-confirm`}
          className="input"
          type="password"
          autoComplete="new-password"
          required
          value={p.confirm}
          onChange={(e) => p.onConfirm(e.target.value)}
        />
      </div>
    </>
  );
}
